"""`forge capsule ...`: proven runs as versioned programs.

list, show, versions, diff, export and import are here; extract and run in capsule_run.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.capsule_diff import render_diff
from workers.cli.capsule_run import capsule_extract_cmd, capsule_run_cmd
from workers.cli.common import (
    TenantOption,
    VerbGroup,
    fail,
    one_line_errors,
    out,
    scope_of,
    settings,
)

if TYPE_CHECKING:
    from schemas.capsule import CapsuleVersion
    from schemas.scope import Scope
    from workers.process.worker import Services

__all__ = ["capsule_app"]

capsule_app = typer.Typer(
    cls=VerbGroup,
    help="Capsules: a proven run sealed into a versioned program that runs again on new data.",
    no_args_is_help=True,
)
capsule_app.command("extract")(one_line_errors(capsule_extract_cmd))
capsule_app.command("run")(one_line_errors(capsule_run_cmd))


def _services() -> Services:
    from workers.process.worker import Services

    return Services.from_settings(settings())


@capsule_app.command("list")
@one_line_errors
def list_cmd(tenant: TenantOption = DEFAULT_TENANT) -> None:
    """The tenant's capsules, each at its newest version."""
    scope = scope_of(tenant)
    found = _services().capsules.list(scope)
    if not found:
        out.print(f"no capsules for tenant {tenant}: make one with `forge capsule extract RUN`")
        return
    table = Table(title=f"capsules of tenant {tenant}", title_justify="left")
    for col in ("capsule", "newest", "hash", "steps", "inputs", "parameters"):
        table.add_column(col, overflow="fold")
    for v in found:
        table.add_row(
            escape(v.name),
            str(v.version),
            v.capsule_hash[7:19],
            str(len(v.content.programs)),
            ", ".join(i.name for i in v.content.inputs),
            ", ".join(s.name for s in v.content.scalars) or "-",
        )
    out.print(table)


@capsule_app.command("show")
@one_line_errors
def show_cmd(
    ref: Annotated[str, typer.Argument(metavar="NAME[@V]")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """One version: its goal, parameters, steps and what each runs, governance, provenance."""
    from activities.capsules.prepare_run import capsule_ref

    name, number = capsule_ref(ref)
    v = _services().capsules.get(scope_of(tenant), name, number)
    c = v.content
    out.print(f"[bold]{escape(v.ref)}[/] · {v.capsule_hash}")
    out.print(f"goal: {escape(c.goal_template)}")
    out.print(
        f"from run {c.provenance.source_run_id} · plan {c.plan_hash[:19]}… · "
        f"profile {c.governance.get('profile_id')}"
    )
    params = Table(title="parameters", title_justify="left")
    for col in ("name", "kind", "expects", "default"):
        params.add_column(col, overflow="fold")
    for i in c.inputs:
        cols = ", ".join(f"{col.name}:{col.type}" for col in i.columns)
        expects = f"{i.kind_key or i.validator or 'file'} at {i.path}" + (
            f" ({cols})" if cols else ""
        )
        params.add_row(i.name, "input", escape(expects), "")
    for s in c.scalars:
        read = f" (read by {', '.join(s.read_by)})" if s.read_by else ""
        params.add_row(s.name, "scalar", f"{s.type}{read}", escape(repr(s.default)))
    out.print(params)
    steps = Table(title="steps", title_justify="left")
    for col in ("step", "runs", "contract"):
        steps.add_column(col, overflow="fold")
    for p in c.programs:
        runs = _runs(p.source, len(p.cells), p.structural)
        steps.add_row(escape(p.step_key), runs, p.contract_hash[7:19])
    out.print(steps)


def _runs(source: str, cells: int, structural: bool) -> str:
    if structural:
        return "fresh code from the executor (structural)"
    return {
        "session": f"{cells} sealed program(s) the executor wrote",
        "frozen": "frozen code in its contract",
        "adapter": "a library adapter",
        "evaluator": "a governed evaluation",
        "gate": "a human decision",
        "recipe": "a sub-recipe",
    }[source]


@capsule_app.command("versions")
@one_line_errors
def versions_cmd(
    name: Annotated[str, typer.Argument(metavar="NAME")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Every version of capsule NAME, oldest first."""
    from activities.capsules.prepare_run import capsule_ref

    base, number = capsule_ref(name)
    if number is not None:
        fail(
            f"{name}: `versions` takes a capsule name; see one version with `forge capsule show`",
            code=ErrorCode.USAGE_INVALID,
        )
    found = _services().capsules.versions(scope_of(tenant), base)
    table = Table(title=f"versions of {name}", title_justify="left")
    for col in ("version", "hash", "created", "by", "from run", "plan"):
        table.add_column(col, overflow="fold")
    for v in found:
        table.add_row(
            str(v.version),
            v.capsule_hash[7:19],
            f"{v.created_at:%Y-%m-%d %H:%M:%S}",
            escape(v.created_by),
            v.content.provenance.source_run_id,
            v.content.plan_hash[7:19],
        )
    out.print(table)


@capsule_app.command("diff")
@one_line_errors
def diff_cmd(
    a: Annotated[str, typer.Argument(metavar="NAME@A")],
    b: Annotated[str, typer.Argument(metavar="NAME@B")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """What changed between two versions: steps, contracts, code, parameters, governance."""
    from workers.services.capsules import diff_versions

    scope = scope_of(tenant)
    services = _services()
    first, second = (_version(services, scope, ref) for ref in (a, b))

    render_diff(diff_versions(services.artifacts, scope, first, second), out)


def _version(services: Services, scope: Scope, ref: str) -> CapsuleVersion:
    from activities.capsules.prepare_run import capsule_ref

    name, number = capsule_ref(ref)
    return services.capsules.get(scope, name, number)


@capsule_app.command("export")
@one_line_errors
def export_cmd(
    ref: Annotated[str, typer.Argument(metavar="NAME@V")],
    output: Annotated[Path, typer.Option("--output", "-o", metavar="FILE", help="Where to write.")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Write a version and every blob it names to FILE, to import in another installation."""
    from activities.capsules.prepare_run import capsule_ref
    from activities.store.capsule_bundle import export_bytes, export_capsule

    scope = scope_of(tenant)
    services = _services()
    name, number = capsule_ref(ref)
    export = export_capsule(services.capsules, services.artifacts, scope, name, number)
    data = export_bytes(export)
    try:
        output.write_bytes(data)
    except OSError as exc:
        fail(f"{output}: cannot write: {exc.strerror or exc}", code=ErrorCode.FILE_UNUSABLE)
    out.print(
        f"[green]✓[/] exported {escape(export.name)}@{export.version} "
        f"({export.capsule_hash[:19]}…, {len(export.blobs)} blobs, {len(data):,} bytes) "
        f"to {output}"
    )


@capsule_app.command("import")
@one_line_errors
def import_cmd(
    file: Annotated[Path, typer.Argument(metavar="FILE")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Import an exported capsule: every hash verified first; a tampered file changes nothing."""
    from workers.services.capsules import MAX_EXPORT_BYTES, import_version

    scope = scope_of(tenant)
    services = _services()
    try:
        if file.stat().st_size > MAX_EXPORT_BYTES:
            fail(
                f"{file}: larger than {MAX_EXPORT_BYTES:,} bytes; not a capsule export",
                code=ErrorCode.FILE_UNUSABLE,
            )
        data = file.read_bytes()
    except OSError as exc:
        fail(f"{file}: cannot read: {exc.strerror or exc}", code=ErrorCode.FILE_UNUSABLE)
    version = import_version(
        services.capsules, services.artifacts, services.events, scope, data, source=str(file)
    )
    if not version.created:
        out.print(
            f"= {escape(version.ref)} already holds this capsule ({version.capsule_hash[:19]}…): "
            "nothing added"
        )
        return
    out.print(
        f"[green]✓[/] imported as [bold]{escape(version.ref)}[/] ({version.capsule_hash[:19]}…, "
        f"verified; from run {version.content.provenance.source_run_id})"
    )
