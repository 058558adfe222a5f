"""`forge skills list|show|register|deprecate`: the skill library and a tenant's registry."""

from __future__ import annotations

import os
import pwd
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import VerbGroup, fail, fail_error, out, reject_packs, scope_of, settings

if TYPE_CHECKING:
    from activities.store.skills_registry import RegisteredSkill, SkillRegistry
    from schemas.skills import SkillPackage

__all__ = ["skills_app"]

skills_app = typer.Typer(
    cls=VerbGroup,
    help="Skill packages: the stdlib/pack library and each tenant's database registry.",
    no_args_is_help=True,
)

_T = TypeVar("_T")
Tenant = Annotated[str, typer.Option("--tenant", help="The tenant whose registry is used.")]


def _guard(action: Callable[[], _T], what: str) -> _T:
    """Run a registry action: a refused package or unknown skill exits 1, the rest exits 2."""
    from sqlalchemy.exc import SQLAlchemyError

    from activities.store.errors import StoreError
    from activities.store.skills_registry import SkillNotRegistered, SkillPackageRefused

    try:
        return action()
    except (SkillPackageRefused, SkillNotRegistered, StoreError) as exc:
        fail_error(exc)
    except ValueError as exc:
        fail(str(exc), "check FORGE_DATABASE_URL", code=ErrorCode.SETTINGS_INVALID)  # its URL
    except SQLAlchemyError as exc:
        detail = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        fail(
            f"{what}: {detail}",
            "check FORGE_DATABASE_URL and that the database is reachable",
            code=ErrorCode.STORE_ERROR,
        )


def _library() -> dict[str, SkillPackage]:
    from activities.compile.typelib import load_library
    from compiler.errors import PackError

    try:
        return load_library(settings().packs_path).skills
    except PackError as exc:
        reject_packs(exc)


def _existing_registry() -> SkillRegistry | None:
    """The registry, or None when the embedded database does not exist yet (reads only)."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    s = settings()
    try:
        url = make_url(s.database_url)
    except ArgumentError:
        fail(
            f"FORGE_DATABASE_URL {s.database_url!r} does not parse", code=ErrorCode.SETTINGS_INVALID
        )
    if url.get_backend_name() == "sqlite" and not Path(url.database or "").is_file():
        return None
    return _open_registry()


def _open_registry() -> SkillRegistry:
    """The registry in FORGE_DATABASE_URL, its files in FORGE_ARTIFACTS_URL."""
    from activities.store.artifacts import open_artifact_store
    from activities.store.skills_registry import open_skill_registry

    s = settings()
    try:
        artifacts = open_artifact_store(s.artifacts_url, s3_endpoint=s.s3_endpoint)
    except ValueError as exc:
        fail(str(exc), "check FORGE_ARTIFACTS_URL", code=ErrorCode.SETTINGS_INVALID)
    return _guard(
        lambda: open_skill_registry(s.database_url, artifacts), "cannot open the skill registry"
    )


def _lookup(registry: SkillRegistry, tenant: str, skill_id: str) -> RegisteredSkill | None:
    from activities.store.skills_registry import SkillNotRegistered

    try:
        return registry.get(tenant, skill_id)
    except SkillNotRegistered:
        return None


def _os_user() -> str:
    # The account, not $USER: the environment is read only in workers.settings.
    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return f"uid {os.getuid()}"


def _origin(skill: SkillPackage) -> str:
    from activities.compile.typelib import STDLIB_DIR

    path = Path(skill.source).absolute()
    return "stdlib" if path.is_relative_to(STDLIB_DIR) else f"pack {path.parent.parent}"


def _short(sha256: str) -> str:
    return sha256[:19]


@skills_app.command("list")
def list_cmd(tenant: Tenant = DEFAULT_TENANT) -> None:
    """Every skill a run of TENANT can bind: stdlib and pack skills, then registry skills."""
    from activities.store.skills_registry import registry_skills_for

    tenant = scope_of(tenant).tenant  # a valid tenant id, or exit 2 saying why
    library = _library()
    registry = _existing_registry()
    versions: list[RegisteredSkill] = []
    shadowed: list[str] = []
    if registry is not None:
        with registry:
            versions = _guard(lambda: registry.latest_versions(tenant), "cannot read skills")
            merged = _guard(lambda: registry_skills_for(registry, tenant, library), "cannot read")
            shadowed = merged.shadowed
    table = Table(title=f"skills for tenant {escape(tenant)}", title_justify="left")
    for column in ("skill", "origin", "version", "status", "sha256", "description"):
        table.add_column(column, overflow="fold", no_wrap=column == "skill")
    rows: list[tuple[str, str, str, str, str, str]] = []
    for skill in library.values():
        status = "deprecated" if skill.deprecated else "active"
        rows.append((skill.skill_id, _origin(skill), "-", status, skill.sha256, skill.description))
    for v in versions:
        reg = v.registration
        status = "deprecated" if reg.deprecated else "active"
        if reg.skill_id in library:
            status = "shadowed by the library"
        origin = f"registry ({reg.registered_by})"
        rows.append(
            (reg.skill_id, origin, str(reg.version), status, reg.sha256, v.package.description)
        )
    for skill_id, origin, version, status, sha, description in sorted(rows):
        short = description if len(description) <= 90 else description[:89] + "…"
        table.add_row(
            f"[bold]{escape(skill_id)}[/]",
            escape(origin),
            version,
            status if status == "active" else f"[dim]{status}[/]",
            _short(sha),
            escape(short),
        )
    out.print(table)
    if registry is None:
        out.print("[dim]no registry database yet: `forge skills register DIR` creates it[/]")
    for message in shadowed:
        out.print(f"[yellow]shadowed:[/] {escape(message)}")


@skills_app.command("show")
def show_cmd(
    skill_id: Annotated[str, typer.Argument(metavar="ID")], tenant: Tenant = DEFAULT_TENANT
) -> None:
    """One skill: where it comes from, its digest, files and output schema."""
    tenant = scope_of(tenant).tenant  # a valid tenant id, or exit 2 saying why
    library = _library()
    registry = _existing_registry()
    found: RegisteredSkill | None = None
    if registry is not None:
        with registry:
            found = _guard(lambda: _lookup(registry, tenant, skill_id), "cannot read skills")
    skill = library.get(skill_id) or (found.package if found else None)
    if skill is None:
        fail(
            f"no skill {skill_id!r} in the library or in tenant {tenant!r}'s registry",
            f"see `forge skills list --tenant {tenant}`",
            code=ErrorCode.SKILL_NOT_REGISTERED,
        )
    grid = Table(show_header=False, title=f"skill {escape(skill_id)}", title_justify="left")
    grid.add_column("field", style="cyan", no_wrap=True)
    grid.add_column("value", overflow="fold")
    from_library = skill_id in library
    grid.add_row("origin", escape(_origin(skill) if from_library else "registry"))
    grid.add_row("source", escape(skill.source))
    if found is not None and not from_library:
        reg = found.registration
        grid.add_row("version", str(reg.version))
        grid.add_row(
            "registered", f"{reg.registered_at:%Y-%m-%d %H:%M:%S} UTC by {reg.registered_by}"
        )
    grid.add_row("status", "deprecated" if skill.deprecated else "active")
    grid.add_row("sha256", skill.sha256)
    grid.add_row("description", escape(skill.description))
    grid.add_row("allowed tools", escape(" ".join(skill.allowed_tools) or "-"))
    grid.add_row("output schema", "yes" if skill.output_schema is not None else "no")
    grid.add_row("license", escape(skill.license or "-"))
    grid.add_row("files", escape("\n".join(skill.files) or "-"))
    out.print(grid)
    if from_library and found is not None:
        out.print(
            f"[yellow]shadowed:[/] tenant {escape(tenant)}'s registry also holds "
            f"{escape(skill_id)} (version {found.registration.version}); the library's wins"
        )


@skills_app.command("register")
def register_cmd(
    directory: Annotated[Path, typer.Argument(metavar="DIR", help="The package directory.")],
    tenant: Tenant = DEFAULT_TENANT,
    actor: Annotated[
        str | None, typer.Option("--actor", help="Who registers it (default: the OS user).")
    ] = None,
) -> None:
    """Register the SKILL.md package in DIR for TENANT (a new version when it changed)."""
    tenant = scope_of(tenant).tenant  # a valid tenant id, or exit 2 saying why
    library = _library()
    name = Path(directory).absolute().name
    if name in library:
        fail(
            f"{directory}: skill {name!r} is a curated library skill ({library[name].source}); "
            "a registry skill cannot shadow it",
            "rename the package (its directory and the SKILL.md name) and register it again",
            code=ErrorCode.SKILL_PACKAGE_REFUSED,
        )
    with _open_registry() as registry:
        reg = _guard(
            lambda: registry.register(directory, tenant_id=tenant, actor=actor or _os_user()),
            "cannot register the skill",
        )
    if not reg.created:
        out.print(
            f"unchanged: [bold]{escape(reg.skill_id)}[/] is already registered for tenant "
            f"{escape(tenant)} as version {reg.version} ({_short(reg.sha256)})"
            + (" [yellow](deprecated)[/]" if reg.deprecated else "")
        )
        return
    out.print(
        f"registered [bold]{escape(reg.skill_id)}[/] version {reg.version} for tenant "
        f"{escape(tenant)}: {len(reg.files)} file(s), {reg.sha256}"
    )


@skills_app.command("deprecate")
def deprecate_cmd(
    skill_id: Annotated[str, typer.Argument(metavar="ID")], tenant: Tenant = DEFAULT_TENANT
) -> None:
    """Deprecate a registry skill of TENANT: runs no longer discover or bind it."""
    tenant = scope_of(tenant).tenant  # a valid tenant id, or exit 2 saying why
    library = _library()
    if skill_id in library:
        fail(
            f"{skill_id!r} is a library skill ({library[skill_id].source}), not a registry skill",
            'deprecate it with `metadata: forge-deprecated: "true"` in its SKILL.md',
            code=ErrorCode.SKILL_NOT_REGISTERED,
        )
    with _open_registry() as registry:
        reg = _guard(lambda: registry.deprecate(tenant, skill_id), "cannot deprecate the skill")
    out.print(
        f"deprecated [bold]{escape(skill_id)}[/] for tenant {escape(tenant)} "
        f"(all versions; latest {reg.version}); register changed content to revive it"
    )
