"""The capsule store: tenants' capsule versions in the database, their blobs in the artifact store.

A version is immutable and sealed by its capsule_hash (compiler.capsule.seal). Adding content
some version of the name already has returns that version (a no-op); anything else is the next
version. Every blob the content names must already be the tenant's artifact, intact, before a
row is written, and every read re-hashes the stored content, so a row edited in the database
is refused rather than run. A tenant only ever sees its own rows: another tenant's capsule
answers exactly like a name that does not exist.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, and_, func, insert, select

from activities.store.artifacts import ArtifactStore
from activities.store.engine import lock_key
from activities.store.errors import ArtifactCorrupt, ArtifactNotFound, ArtifactTooLarge
from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import capsules
from activities.store.tenancy import scoped
from compiler.capsule.seal import SealBroken, capsule_hash, content_blobs
from schemas.artifacts import ArtifactRef
from schemas.capsule import CAPSULE_NAME_PATTERN, CapsuleContent, CapsuleVersion
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope

__all__ = [
    "MAX_BLOB_BYTES",
    "CapsuleNotFound",
    "CapsuleStore",
    "SealBroken",
    "check_name",
    "open_capsule_store",
    "read_blob",
]

# A capsule's plan, programs and receipts are small; anything larger is not one of them.
MAX_BLOB_BYTES = 32 << 20
_NAME = re.compile(CAPSULE_NAME_PATTERN)


class CapsuleNotFound(ForgeError, KeyError):
    """The tenant has no capsule of that name, or not that version."""

    code = ErrorCode.CAPSULE_NOT_FOUND
    message_is_complete = True  # the message says what exists and where to look


class CapsuleStore:
    """Capsule versions per tenant: add (idempotent by content), get, versions, list."""

    def __init__(self, engine: Engine, artifacts: ArtifactStore) -> None:
        self._engine = engine
        self._artifacts = artifacts

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> CapsuleStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- writing -----------------------------------------------------------------------------

    def add(
        self, scope: Scope, name: str, content: CapsuleContent, *, actor: str
    ) -> CapsuleVersion:
        """Store `content` as the next version of the tenant's capsule `name`, or find it.

        Returns the version whose hash is the content's (`created=False`) when the name already
        has one, else the new version (`created=True`).

        Raises:
            ForgeError: CAPSULE_REFUSED, `name` does not match CAPSULE_NAME_PATTERN.
            SealBroken: A blob the content names is missing from the tenant's artifacts, corrupt
                or of another size; nothing was stored.
        """
        check_name(name)
        where = f"capsule {name!r} of tenant {scope.tenant!r}"
        for ref in content_blobs(content):
            read_blob(self._artifacts, scope, ref, where)
        sealed = capsule_hash(content)
        tenant = scope.tenant
        with scoped(self._engine, scope.tenant, write=True) as conn:
            lock_key(conn, f"capsules:{tenant}:{name}")
            mine = and_(capsules.c.tenant_id == tenant, capsules.c.name == name)
            found = (
                conn.execute(select(capsules).where(mine, capsules.c.capsule_hash == sealed))
                .mappings()
                .first()
            )
            if found is not None:
                return _version(found, where=_where(found), created=False)
            latest = conn.execute(select(func.max(capsules.c.version)).where(mine)).scalar()
            row = {
                "tenant_id": tenant,
                "name": name,
                "version": 1 if latest is None else int(latest) + 1,
                "capsule_hash": sealed,
                "content": content.model_dump(mode="json"),
                "source_run_id": content.provenance.source_run_id,
                "created_at": datetime.now(UTC),
                "created_by": actor,
            }
            conn.execute(insert(capsules).values(**row))
        return _version(row, where=where, created=True)

    # ---- reading -----------------------------------------------------------------------------

    def get(self, scope: Scope, name: str, version: int | None = None) -> CapsuleVersion:
        """The tenant's capsule `name` at `version` (the latest when None), re-verified.

        Raises:
            CapsuleNotFound: The tenant has no capsule `name`, or not that version.
            SealBroken: The stored content no longer hashes to its capsule_hash.
        """
        mine = and_(capsules.c.tenant_id == scope.tenant, capsules.c.name == name)
        query = select(capsules).where(mine).order_by(capsules.c.version.desc()).limit(1)
        if version is not None:
            query = select(capsules).where(mine, capsules.c.version == version)
        with scoped(self._engine, scope.tenant) as conn:
            row = conn.execute(query).mappings().first()
            if row is None:
                held = conn.execute(
                    select(capsules.c.version).where(mine).order_by(capsules.c.version)
                ).scalars()
                raise _not_found(scope, name, version, builtins.list(held))
        return _version(row, where=_where(row), created=False)

    def versions(self, scope: Scope, name: str) -> builtins.list[CapsuleVersion]:
        """Every version of the tenant's capsule `name`, oldest first, each re-verified.

        Raises:
            CapsuleNotFound: The tenant has no capsule `name`.
            SealBroken: A stored version no longer hashes to its capsule_hash.
        """
        query = (
            select(capsules)
            .where(capsules.c.tenant_id == scope.tenant, capsules.c.name == name)
            .order_by(capsules.c.version)
        )
        with scoped(self._engine, scope.tenant) as conn:
            rows = builtins.list(conn.execute(query).mappings())
        if not rows:
            raise _not_found(scope, name, None, [])
        return [_version(row, where=_where(row), created=False) for row in rows]

    def list(self, scope: Scope) -> builtins.list[CapsuleVersion]:
        """The latest version of each of the tenant's capsules, by name, each re-verified.

        Raises:
            SealBroken: A stored version no longer hashes to its capsule_hash.
        """
        newest = (
            select(capsules.c.name, func.max(capsules.c.version).label("version"))
            .where(capsules.c.tenant_id == scope.tenant)
            .group_by(capsules.c.name)
            .subquery()
        )
        query = (
            select(capsules)
            .join(
                newest,
                and_(capsules.c.name == newest.c.name, capsules.c.version == newest.c.version),
            )
            .where(capsules.c.tenant_id == scope.tenant)
            .order_by(capsules.c.name)
        )
        with scoped(self._engine, scope.tenant) as conn:
            rows = builtins.list(conn.execute(query).mappings())
        return [_version(row, where=_where(row), created=False) for row in rows]

    # ---- internals ---------------------------------------------------------------------------


def read_blob(artifacts: ArtifactStore, scope: Scope, ref: ArtifactRef, where: str) -> bytes:
    """A blob the capsule names, read from the tenant's artifacts and checked against `ref`.

    Raises:
        SealBroken: The blob is missing, corrupt, too large or not `ref.size_bytes` long.
    """
    label = f"{where}: artifact {ref.path} ({ref.sha256})"
    try:
        data = artifacts.read_bytes(scope, ref.sha256, MAX_BLOB_BYTES)
    except ArtifactNotFound:
        raise SealBroken(
            f"{label} is not stored for tenant {scope.tenant!r}; store the capsule's "
            "artifacts first (or import the capsule from its export file)"
        ) from None
    except (ArtifactCorrupt, ArtifactTooLarge) as exc:
        raise SealBroken(f"{label} cannot be used: {exc}") from None
    except ValueError as exc:  # not a sha256 digest at all
        raise SealBroken(f"{label}: {exc}") from None
    if len(data) != ref.size_bytes:
        raise SealBroken(f"{label} is {len(data):,} bytes, the capsule says {ref.size_bytes:,}")
    return data


def check_name(name: str) -> None:
    """Refuse a capsule name outside CAPSULE_NAME_PATTERN.

    Raises:
        ForgeError: CAPSULE_REFUSED, the name is empty, too long or has other characters.
    """
    if _NAME.fullmatch(name) is None:
        raise ForgeError(
            f"capsule name {name!r} is not valid: use 1 to 64 lower-case letters, digits, '_', "
            "'.' or '-', starting with a letter or digit (e.g. billing-audit)",
            code=ErrorCode.CAPSULE_REFUSED,
        )


def open_capsule_store(database_url: str, artifacts: ArtifactStore) -> CapsuleStore:
    """The capsule store in the database at `database_url`, migrated like the event store.

    SQLite is migrated on open; PostgreSQL must already be at the newest schema.

    Raises:
        ValueError: The URL is malformed or names an unsupported backend.
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    return CapsuleStore(open_migrated(database_url), artifacts)


def _where(row: Mapping[Any, Any]) -> str:
    return f"capsule {row['name']}@{row['version']} of tenant {row['tenant_id']!r}"


def _version(row: Mapping[Any, Any], *, where: str, created: bool) -> CapsuleVersion:
    """The row as a CapsuleVersion, after its content is re-hashed against capsule_hash."""
    redo = "do not run it; add the capsule again from its source run, or import its export file"
    try:
        content = CapsuleContent.model_validate(row["content"])
    except ValidationError as exc:
        raise SealBroken(
            f"{where}: the stored content is not a capsule ({exc.error_count()} error(s)); {redo}"
        ) from None
    again = capsule_hash(content)
    if again != row["capsule_hash"]:
        raise SealBroken(
            f"{where}: its stored content hashes to {again}, sealed as {row['capsule_hash']}; "
            f"the row was altered in the database: {redo}"
        )
    return CapsuleVersion(
        tenant_id=row["tenant_id"],
        name=row["name"],
        version=row["version"],
        capsule_hash=row["capsule_hash"],
        content=content,
        created_at=utc(row["created_at"]),
        created_by=row["created_by"],
        created=created,
    )


def _not_found(
    scope: Scope, name: str, version: int | None, held: builtins.list[int]
) -> CapsuleNotFound:
    # Built only from the asking tenant's rows: another tenant's capsule reads as absent.
    if held:
        listed = ", ".join(str(v) for v in held)
        return CapsuleNotFound(
            f"capsule {name!r} of tenant {scope.tenant!r} has no version {version}: it has "
            f"versions {listed}; see `forge capsule versions {name}`"
        )
    return CapsuleNotFound(
        f"tenant {scope.tenant!r} has no capsule {name!r}: see `forge capsule list`"
    )
