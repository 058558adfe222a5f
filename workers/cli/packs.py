"""`forge packs`: list, show and check the type library (stdlib plus FORGE_PACKS_PATH)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import VerbGroup, fail, out, reject_packs, settings

if TYPE_CHECKING:
    from compiler.typesystem.library import TypeLibrary

packs_app = typer.Typer(
    cls=VerbGroup,
    help="Inspect and check domain/workflow packs and the type library.",
    no_args_is_help=True,
)


def _library(extra: tuple[Path, ...] = ()) -> TypeLibrary:
    from activities.compile.typelib import load_library
    from compiler.errors import PackError

    try:
        return load_library((*settings().packs_path, *extra))
    except PackError as exc:
        reject_packs(exc)


@packs_app.command("list")
def list_cmd() -> None:
    """Every pack, policy, kind count and adapter in the library."""
    lib = _library()
    domains = Table(title=f"Domain packs ({len(lib.domain_packs)})", title_justify="left")
    for col in ("id", "entities", "profiles", "default policy", "triggers"):
        domains.add_column(col)
    for p in lib.domain_packs.values():
        domains.add_row(
            p.domain_pack_id,
            str(len(p.entity_schemas)),
            str(len(p.canonical_profiles)),
            p.default_policy_profile_id,
            escape(", ".join(p.triggers[:3])),
        )
    workflows = Table(title=f"Workflow packs ({len(lib.workflow_packs)})", title_justify="left")
    for col in ("id", "inputs → outputs", "triggers"):
        workflows.add_column(col)
    for w in lib.workflow_packs.values():
        slots = f"{', '.join(w.typical_slots.inputs) or '-'} → {', '.join(w.typical_slots.outputs)}"
        flag = " [magenta](side effects)[/]" if w.side_effecting else ""
        workflows.add_row(w.workflow_pack_id + flag, slots, escape(", ".join(w.triggers[:3])))
    policies = Table(title=f"Policy profiles ({len(lib.policies)})", title_justify="left")
    for col in ("id", "adapters", "generic", "provenance", "max retries"):
        policies.add_column(col)
    for pol in lib.policies.values():
        policies.add_row(
            pol.policy_profile_id,
            _yes(pol.allow_adapters),
            _yes(pol.allow_generic_inference),
            pol.provenance,
            str(pol.repair.max_retries),
        )
    out.print(domains, workflows, policies)
    out.print(
        f"{len(lib.kinds)} artifact kinds, {len(lib.slots)} slots, {len(lib.entities)} "
        f"entities, {len(lib.profiles)} artifact profiles, adapters: " + ", ".join(lib.adapters)
    )
    for note in lib.overrides:
        out.print(f"[yellow]override:[/] {escape(note)}")


def _yes(flag: bool) -> str:
    return "[green]yes[/]" if flag else "no"


@packs_app.command("show")
def show_cmd(item_id: Annotated[str, typer.Argument(metavar="ID")]) -> None:
    """One pack, policy, kind, slot, adapter, entity or execution profile, as JSON."""
    from activities.compile.typelib import load_profiles
    from compiler.errors import PackError
    from schemas.base import FrozenModel

    lib = _library()
    s = settings()
    try:
        layers, _ = load_profiles(s.packs_path, home=s.home)
    except PackError as exc:
        reject_packs(exc)
    tables: dict[str, Mapping[str, FrozenModel]] = {
        "domain pack": lib.domain_packs,
        "workflow pack": lib.workflow_packs,
        "policy profile": lib.policies,
        "artifact kind": lib.kinds,
        "slot": lib.slots,
        "adapter": lib.adapters,
        "entity": lib.entities,
        "artifact profile": lib.profiles,
        "execution profile": {**layers.builtin, **layers.workspace},
    }
    for label, table in tables.items():
        if item_id in table:
            source = lib.sources.get(item_id, "")
            out.print(f"[bold]{label}[/] {escape(item_id)} [dim]{escape(source)}[/]")
            out.print_json(json.dumps(table[item_id].model_dump(mode="json")))
            return
    fail(
        f"nothing named {item_id!r} in the type library",
        "try `forge packs list`; ids look like billing-audit, reconcile-compare, table.csv",
        code=ErrorCode.NOT_FOUND,
    )


@packs_app.command("check")
def check_cmd(directory: Annotated[Path, typer.Argument(metavar="DIR")]) -> None:
    """Check a custom pack directory against the stdlib; exit 2 naming every file and field."""
    if not directory.is_dir():
        fail(f"{directory}: not a directory", code=ErrorCode.FILE_UNUSABLE)
    lib = _library((directory,))
    own = [
        k
        for k, src in lib.sources.items()
        if Path(src).resolve().is_relative_to(directory.resolve())
    ]
    out.print(
        f"[green]✓[/] {directory}: {len(own)} definitions check out against the library "
        f"({len(lib.domain_packs)} domain packs, {len(lib.workflow_packs)} workflow packs)"
    )
    for note in lib.overrides:
        out.print(f"[yellow]override:[/] {escape(note)}")
