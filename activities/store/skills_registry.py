"""The database skill registry: tenants' SKILL.md packages, versioned, stored by content.

A package is read the way `activities.compile.typelib.load_skills` reads one (through
`compiler.recipes.skillpack.skill_package`, so validation is identical), but as low-trust input:
symlinks, special files, oversized files and oversized packages are refused, and every file goes
to the content-addressed artifact store before it is parsed, so what is validated is exactly what
is stored. A registry package's `sha256` covers every file (SKILL.md, its output schema, scripts,
assets): the digest a contract binds therefore pins every byte the sandbox will see.
Registering content identical to a skill's latest version is a no-op; anything else is a new
version. A tenant only ever sees its own rows.
"""

from __future__ import annotations

import builtins
import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, and_, func, insert, select, update
from sqlalchemy.engine import Connection

from activities.store.artifacts import ArtifactStore
from activities.store.engine import lock_key
from activities.store.errors import (
    ArtifactCorrupt,
    ArtifactNotFound,
    ArtifactTooLarge,
    UnsafeSource,
)
from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.skill_packages import (
    MAX_FILE_BYTES,
    MAX_FILES,
    MAX_PACKAGE_BYTES,
    SKILL_FILE,
    SkillNotRegistered,
    SkillPackageRefused,
    SkillRegistryError,
    package_digest,
    package_files,
    remove_tree,
    seal_tree,
)
from activities.store.tables import skills
from activities.store.tenancy import scoped
from compiler.recipes.skillpack import skill_package
from compiler.recipes.skills import MAX_SKILL, RecipeImportError
from schemas.artifacts import ArtifactRef
from schemas.error_codes import ErrorCode
from schemas.scope import Scope
from schemas.skills import SkillPackage, SkillRegistration

__all__ = [
    "REGISTRY_SOURCE",
    "MergedSkills",
    "RegisteredSkill",
    "SkillNotRegistered",
    "SkillPackageRefused",
    "SkillRegistry",
    "SkillRegistryError",
    "open_skill_registry",
    "package_digest",
    "registry_skills_for",
]

# The source of a registry package begins so: registry:<tenant>/<skill>@v<version>.
REGISTRY_SOURCE = "registry:"


@dataclass(frozen=True)
class RegisteredSkill:
    """A skill's latest registered version: the row, the package, and its files."""

    registration: SkillRegistration
    package: SkillPackage
    files: dict[str, ArtifactRef]


@dataclass(frozen=True)
class MergedSkills:
    """The skills a tenant's runs may use, and the registry skills a stdlib skill outranked."""

    skills: dict[str, SkillPackage]
    shadowed: list[str] = field(default_factory=list)


class SkillRegistry:
    """Skill packages per tenant in the `skills` table; their bytes in the artifact store."""

    def __init__(
        self,
        engine: Engine,
        artifacts: ArtifactStore,
        *,
        max_files: int = MAX_FILES,
        max_file_bytes: int = MAX_FILE_BYTES,
        max_package_bytes: int = MAX_PACKAGE_BYTES,
    ) -> None:
        self._engine = engine
        self._artifacts = artifacts
        self.max_files = max_files
        self.max_file_bytes = max_file_bytes
        self.max_package_bytes = max_package_bytes

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> SkillRegistry:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- writing -----------------------------------------------------------------------------

    def register(self, directory: Path, *, tenant_id: str, actor: str) -> SkillRegistration:
        """Register the package in `directory` for `tenant_id`; a new version if it changed.

        Raises:
            SkillPackageRefused: The directory is not a safe, valid skill package; nothing
                was registered.
        """
        directory = Path(os.path.normpath(directory.absolute()))
        scope = Scope.of_tenant(tenant_id)  # the package's files are the tenant's artifacts
        refs = self._store_files(scope, directory)
        package = self._parse(scope, directory, refs)
        digest = package_digest(package.skill_id, {p: r.sha256 for p, r in refs.items()})
        with scoped(self._engine, tenant_id, write=True) as conn:
            lock_key(conn, f"skills:{tenant_id}:{package.skill_id}")
            latest = self._latest_row(conn, tenant_id, package.skill_id)
            if latest is not None and latest["sha256"] == digest:
                return _registration(latest, created=False)
            version = 1 if latest is None else int(latest["version"]) + 1
            source = f"{REGISTRY_SOURCE}{tenant_id}/{package.skill_id}@v{version}"
            manifest = package.model_copy(update={"sha256": digest, "source": source})
            row = {
                "tenant_id": tenant_id,
                "skill_id": package.skill_id,
                "version": version,
                "sha256": digest,
                "manifest": manifest.model_dump(mode="json"),
                "files": {p: r.model_dump(mode="json") for p, r in sorted(refs.items())},
                "deprecated": package.deprecated,
                "registered_at": datetime.now(UTC),
                "registered_by": actor,
            }
            conn.execute(insert(skills).values(**row))
        return _registration(row, created=True)

    def deprecate(self, tenant_id: str, skill_id: str) -> SkillRegistration:
        """Mark every version of a tenant's skill deprecated; returns the latest version.

        Registering changed content afterwards makes a new, non-deprecated version.

        Raises:
            SkillNotRegistered: The tenant has no skill `skill_id`.
        """
        mine = and_(skills.c.tenant_id == tenant_id, skills.c.skill_id == skill_id)
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(update(skills).where(mine).values(deprecated=True))
            latest = self._latest_row(conn, tenant_id, skill_id)
        if latest is None:
            raise _not_registered(tenant_id, skill_id)
        return _registration(latest, created=False)

    # ---- reading -----------------------------------------------------------------------------

    def list(self, tenant_id: str) -> dict[str, SkillPackage]:
        """The latest version of each of the tenant's skills that is not deprecated, by id."""
        return {
            s.package.skill_id: s.package
            for s in self.latest_versions(tenant_id)
            if not s.registration.deprecated
        }

    def latest_versions(self, tenant_id: str) -> builtins.list[RegisteredSkill]:
        """The latest version of every skill of the tenant, deprecated ones included, by id."""
        newest = (
            select(skills.c.skill_id, func.max(skills.c.version).label("version"))
            .where(skills.c.tenant_id == tenant_id)
            .group_by(skills.c.skill_id)
            .subquery()
        )
        query = (
            select(skills)
            .join(
                newest,
                and_(skills.c.skill_id == newest.c.skill_id, skills.c.version == newest.c.version),
            )
            .where(skills.c.tenant_id == tenant_id)
            .order_by(skills.c.skill_id)
        )
        with scoped(self._engine, tenant_id) as conn:
            return [_registered(row) for row in conn.execute(query).mappings()]

    def get(self, tenant_id: str, skill_id: str) -> RegisteredSkill:
        """A tenant's skill at its latest version (deprecated or not).

        Raises:
            SkillNotRegistered: The tenant has no skill `skill_id`.
        """
        with scoped(self._engine, tenant_id) as conn:
            row = self._latest_row(conn, tenant_id, skill_id)
        if row is None:
            raise _not_registered(tenant_id, skill_id)
        return _registered(row)

    def materialize(self, tenant_id: str, skill_id: str, sha256: str, dest: Path) -> Path:
        """Write the skill's files read-only under `dest/<skill_id>`, verified; returns it.

        Files are 0o444 and directories 0o555. A previous materialization at that place is
        replaced. Only the latest, non-deprecated version is materialized, and only when its
        digest is `sha256` (the digest the contract was bound to).

        Raises:
            SkillNotRegistered: The tenant has no skill `skill_id`.
            SkillRegistryError: SKILL_INTEGRITY, the registered digest differs from `sha256`, the
                skill is deprecated, or a stored file no longer matches its digest.
        """
        found = self.get(tenant_id, skill_id)
        reg = found.registration
        where = f"skill {skill_id!r} of tenant {tenant_id!r} (version {reg.version})"
        if reg.sha256 != sha256:
            raise SkillRegistryError(
                f"{where} is registered as {reg.sha256}, the contract is bound to {sha256}: "
                "recompile the plan to bind the current version",
                code=ErrorCode.SKILL_INTEGRITY,
            )
        if reg.deprecated:
            raise SkillRegistryError(
                f"{where} is deprecated: bind its replacement and recompile",
                code=ErrorCode.SKILL_INTEGRITY,
            )
        files = {p: r.sha256 for p, r in found.files.items()}
        if package_digest(skill_id, files) != reg.sha256:
            raise SkillRegistryError(
                f"{where}: its file list no longer hashes to {reg.sha256}; the registry row was "
                "altered: register the package again from its source directory",
                code=ErrorCode.SKILL_INTEGRITY,
            )
        target = dest / skill_id
        dest.mkdir(parents=True, exist_ok=True)
        work = Path(tempfile.mkdtemp(dir=dest, prefix=f".{skill_id}."))
        try:
            scope = Scope.of_tenant(tenant_id)
            for rel, ref in sorted(found.files.items()):
                self._fetch(scope, where, rel, ref, work)
            seal_tree(work)
            remove_tree(target)
            os.rename(work, target)
        except BaseException:
            remove_tree(work)
            raise
        return target

    # ---- internals ---------------------------------------------------------------------------

    def _store_files(self, scope: Scope, directory: Path) -> dict[str, ArtifactRef]:
        """Every package file, stored; refuses anything unsafe before storing anything."""
        listed = package_files(directory, self.max_files, self.max_file_bytes)
        total = sum(size for _, _, size in listed)
        if total > self.max_package_bytes:
            raise SkillPackageRefused(
                f"{directory}: {total:,} bytes in all; a skill package is at most "
                f"{self.max_package_bytes:,} bytes: move large data out of the package"
            )
        refs: dict[str, ArtifactRef] = {}
        for rel, path, _ in listed:
            try:
                ref = self._artifacts.put_file(scope, path, logical_path=f"skills/{rel}")
            except UnsafeSource as exc:
                raise SkillPackageRefused(f"{directory}: {exc}; nothing was registered") from None
            if ref.size_bytes > self.max_file_bytes:  # it grew after it was listed
                raise SkillPackageRefused(
                    f"{path}: {ref.size_bytes:,} bytes; a package file is at most "
                    f"{self.max_file_bytes:,} bytes"
                )
            refs[rel] = ref
        return refs

    def _parse(self, scope: Scope, directory: Path, refs: dict[str, ArtifactRef]) -> SkillPackage:
        """The SkillPackage of the stored bytes, through the loader's own parser."""
        if SKILL_FILE not in refs:
            raise SkillPackageRefused(
                f"{directory}: no {SKILL_FILE}; a skill package is a directory named after the "
                f"skill with {SKILL_FILE} at its top"
            )

        def read(name: str) -> str | None:
            ref = refs.get(name)
            return None if ref is None else self._text(scope, directory / name, ref)

        text = self._text(scope, directory / SKILL_FILE, refs[SKILL_FILE], limit=MAX_SKILL)
        try:
            return skill_package(
                text,
                directory.name,
                read_file=read,
                files=list(refs),
                source=str(directory / SKILL_FILE),
            )
        except RecipeImportError as exc:
            raise SkillPackageRefused(f"{exc}; nothing was registered") from None

    def _text(self, scope: Scope, path: Path, ref: ArtifactRef, limit: int | None = None) -> str:
        try:
            data = self._artifacts.read_bytes(scope, ref.sha256, limit or self.max_file_bytes)
        except ArtifactTooLarge:
            raise SkillPackageRefused(
                f"{path}: larger than {limit or self.max_file_bytes:,} bytes"
            ) from None
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise SkillPackageRefused(f"{path}: not UTF-8 text (byte {exc.start})") from None

    def _fetch(self, scope: Scope, where: str, rel: str, ref: ArtifactRef, work: Path) -> None:
        parts = PurePosixPath(rel).parts
        if PurePosixPath(rel).is_absolute() or not parts or ".." in parts or "\\" in rel:
            raise SkillRegistryError(
                f"{where}: file path {rel!r} escapes the package; the registry row was altered: "
                "register the package again",
                code=ErrorCode.SKILL_INTEGRITY,
            )
        path = work.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._artifacts.get_to_file(scope, ref.sha256, path)
        except (ArtifactCorrupt, ArtifactNotFound) as exc:
            raise SkillRegistryError(
                f"{where}: file {rel!r} cannot be materialized ({exc}); register the package "
                "again from its source directory",
                code=ErrorCode.SKILL_INTEGRITY,
            ) from None
        if path.stat().st_size != ref.size_bytes:
            raise SkillRegistryError(
                f"{where}: file {rel!r} is {path.stat().st_size} bytes, registered as "
                f"{ref.size_bytes}; register the package again",
                code=ErrorCode.SKILL_INTEGRITY,
            )

    @staticmethod
    def _latest_row(conn: Connection, tenant_id: str, skill_id: str) -> Mapping[Any, Any] | None:
        query = (
            select(skills)
            .where(skills.c.tenant_id == tenant_id, skills.c.skill_id == skill_id)
            .order_by(skills.c.version.desc())
            .limit(1)
        )
        return conn.execute(query).mappings().first()


def registry_skills_for(
    registry: SkillRegistry, tenant_id: str, library_skills: Mapping[str, SkillPackage]
) -> MergedSkills:
    """The stdlib/pack skills plus the tenant's registry skills; a curated skill wins a clash."""
    merged = dict(library_skills)
    shadowed: list[str] = []
    for skill_id, package in sorted(registry.list(tenant_id).items()):
        if skill_id in merged:
            shadowed.append(
                f"registry skill {skill_id!r} of tenant {tenant_id!r} ({package.source}) is not "
                f"used: the curated skill {merged[skill_id].source or skill_id} has the same id; "
                "rename the registered skill (its directory and SKILL.md name) and register it "
                "again"
            )
            continue
        merged[skill_id] = package
    return MergedSkills(skills=merged, shadowed=shadowed)


def open_skill_registry(database_url: str, artifacts: ArtifactStore) -> SkillRegistry:
    """The registry in the database at `database_url`, migrated like the event store.

    SQLite is migrated on open; PostgreSQL must already be at the newest schema.

    Raises:
        ValueError: The URL is malformed or names an unsupported backend.
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    return SkillRegistry(open_migrated(database_url), artifacts)


def _registration(row: Mapping[Any, Any], *, created: bool) -> SkillRegistration:
    return SkillRegistration(
        tenant_id=row["tenant_id"],
        skill_id=row["skill_id"],
        version=row["version"],
        sha256=row["sha256"],
        deprecated=row["deprecated"],
        registered_at=utc(row["registered_at"]),
        registered_by=row["registered_by"],
        files=sorted(row["files"]),
        created=created,
    )


def _registered(row: Mapping[Any, Any]) -> RegisteredSkill:
    try:
        package = SkillPackage.model_validate(row["manifest"])
        files = {p: ArtifactRef.model_validate(r) for p, r in row["files"].items()}
    except ValidationError as exc:
        raise SkillRegistryError(
            f"skill {row['skill_id']!r} of tenant {row['tenant_id']!r} (version "
            f"{row['version']}): the stored manifest is invalid ({exc.error_count()} error(s)); "
            "register the package again",
            code=ErrorCode.SKILL_INTEGRITY,
        ) from None
    package = package.model_copy(update={"deprecated": bool(row["deprecated"])})
    return RegisteredSkill(_registration(row, created=False), package, files)


def _not_registered(tenant_id: str, skill_id: str) -> SkillNotRegistered:
    return SkillNotRegistered(
        f"tenant {tenant_id!r} has no registered skill {skill_id!r}: see `forge skills list "
        f"--tenant {tenant_id}`, or register it with `forge skills register DIR`"
    )
