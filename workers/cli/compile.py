"""`forge compile` and `forge explain`: a plan in, frozen contracts (or every problem) out."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape
from rich.panel import Panel
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.common import compile_context, fail, out, read_plan, reject_plan

if TYPE_CHECKING:
    from compiler.plan.context import CompileContext
    from schemas.base import FrozenModel
    from schemas.compiled import CompiledPlan, CompiledStep

ProfileOpt = Annotated[
    str | None,
    typer.Option("--profile", "-p", help="Execution profile id, or a profile YAML file."),
]


def _stages(plan_file: Path, ctx: CompileContext) -> dict[str, FrozenModel]:
    from compiler.errors import CompilerError
    from compiler.plan.parse import parse_candidate
    from compiler.plan.pipeline import run_passes

    raw = read_plan(plan_file)
    try:
        return run_passes(parse_candidate(raw), ctx=ctx)
    except CompilerError as exc:
        reject_plan(exc, str(plan_file))


def compile_cmd(
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN.json", help="A forge.plan/1 file.")],
    profile: ProfileOpt = None,
    out_dir: Annotated[
        Path | None, typer.Option("--out", help="Write compiled_plan.json and contracts/ here.")
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", help="Print the compiled plan as JSON.")
    ] = False,
) -> None:
    """Compile a plan into hashed step contracts; exit 2 with every problem if rejected."""
    from schemas.compiled import CompiledPlan

    plan = _stages(plan_file, compile_context(profile))["E"]
    assert isinstance(plan, CompiledPlan)
    if out_dir is not None:
        _write(plan, out_dir)
    if as_json:
        typer.echo(plan.model_dump_json(indent=2))
        return
    out.print(_steps_table(plan, plan_file))
    snap = plan.profile_snapshot
    # A hash is copied whole: never wrapped at the terminal's width.
    out.print(f"plan hash      [bold]{plan.plan_hash}[/]", soft_wrap=True)
    out.print(f"profile        {snap.profile_id} ({snap.scope}) {snap.snapshot_hash[:19]}…")
    out.print(f"type library   {plan.library_snapshot_hash[:19]}…")
    for w in plan.warnings:
        out.print(f"[yellow]warning:[/] {escape(w)}")
    if out_dir is not None:
        out.print(
            f"[green]✓[/] wrote {out_dir / 'compiled_plan.json'} and "
            f"{len(plan.steps)} contracts under {out_dir / 'contracts'}"
        )


def _write(plan: CompiledPlan, out_dir: Path) -> None:
    contracts = out_dir / "contracts"
    try:
        contracts.mkdir(parents=True, exist_ok=True)
        (out_dir / "compiled_plan.json").write_text(plan.model_dump_json(indent=2) + "\n")
        for step in plan.steps:
            (contracts / f"{step.step_id}.{step.step_key}.json").write_text(
                step.model_dump_json(indent=2) + "\n"
            )
    except OSError as exc:
        fail(f"cannot write to {out_dir}: {exc.strerror}", code=ErrorCode.FILE_UNUSABLE)


def _binding_text(step: CompiledStep) -> str:
    lines = []
    for b in step.bindings:
        origin = b.source.step_key or f"input:{b.source.slot}"
        lines.append(f"{escape(b.slot)} ← {escape(origin)} [dim]r{b.rank}[/]")
    return "\n".join(lines) or "[dim]-[/]"


def _steps_table(plan: CompiledPlan, source: Path) -> Table:
    table = Table(
        title=f"{source}: {len(plan.steps)} steps compiled",
        title_justify="left",
        show_lines=True,
        caption="r1 exact · r2 accepted kind · r3 adapter · r4 generic",
        caption_justify="left",
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("step", overflow="fold")
    table.add_column("packs · policy", overflow="fold")
    table.add_column("inputs ← producer", overflow="fold")
    table.add_column("contract", no_wrap=True)
    for step in plan.steps:
        name = f"[bold]{escape(step.step_key)}[/]\n[dim]{step.kind} · {step.backend}[/]"
        if step.inserted_by_compiler:
            name += f"\n[magenta]inserted: {escape(step.adapter_id or '')}[/]"
        packs = ", ".join(step.domain_pack_ids + step.workflow_pack_ids) or "[yellow]none[/]"
        packs += f"\n[dim]{step.policy_profile_id}[/]"
        if step.resolution_status not in ("resolved", "pinned"):
            packs += f"\n[yellow]{step.resolution_status}[/]"
        table.add_row(
            step.step_id.removeprefix("step_"),
            name,
            packs,
            _binding_text(step),
            step.contract_hash[7:19],
        )
    return table


def explain_cmd(
    plan_file: Annotated[Path, typer.Argument(metavar="PLAN.json")],
    step_key: Annotated[str, typer.Argument(metavar="STEP_KEY")],
    profile: ProfileOpt = None,
) -> None:
    """Follow one step through passes A to E and show what each pass added (seed 000 §5.7)."""
    from schemas.compiled import CompiledPlan

    stages = _stages(plan_file, compile_context(profile))
    views = {letter: _step_view(model, step_key) for letter, model in stages.items()}
    if views["E"] is None:
        final = stages["E"]
        assert isinstance(final, CompiledPlan)
        known = ", ".join(s.step_key for s in final.steps)
        fail(
            f"no step {step_key!r} in {plan_file}", f"steps: {known}", code=ErrorCode.USAGE_INVALID
        )
    titles = {
        "A": "Pass A — structural planning (the candidate)",
        "B": "Pass B — intent resolution",
        "C": "Pass C — compilation",
        "D": "Pass D — skill resolution (deterministic: tools and execution mode)",
        "E": "Pass E — freeze and dispatch",
    }
    previous: dict[str, Any] = {}
    for letter, title in titles.items():
        view = views[letter]
        if view is None:
            out.print(
                Panel(
                    "[dim]not present yet: inserted by the compiler in Pass C[/]",
                    title=title,
                    title_align="left",
                )
            )
            continue
        added = {k: v for k, v in view.items() if previous.get(k) != v and v not in (None, [], {})}
        out.print(Panel(_fields_table(added), title=title, title_align="left"))
        previous = view


def _step_view(model: FrozenModel, step_key: str) -> dict[str, Any] | None:
    from schemas.compiled import CompiledPlan

    data = model.model_dump(mode="json", exclude_defaults=False)
    step = next((s for s in data.get("steps", []) if s["step_key"] == step_key), None)
    if step is None:
        return None
    if isinstance(model, CompiledPlan):
        packet = next(p for p in data["dispatch_packets"] if p["step_key"] == step_key)
        step = {**step, **{k: v for k, v in packet.items() if k not in ("step_key", "step_id")}}
        step["profile_snapshot"] = (
            f"{model.profile_snapshot.profile_id} ({model.profile_snapshot.scope})"
        )
    return dict(step)


def _prune(value: Any) -> Any:
    """Drop nulls and empty containers so a panel shows what a pass decided, not padding."""
    if isinstance(value, dict):
        kept = {k: _prune(v) for k, v in value.items()}
        return {k: v for k, v in kept.items() if v not in (None, [], {})}
    if isinstance(value, list):
        return [_prune(v) for v in value]
    return value


def _render(value: Any) -> str:
    value = _prune(value)
    if isinstance(value, list):
        return "\n".join(_render_one(v) for v in value) or "[]"
    if isinstance(value, dict):
        return "\n".join(f"{k}: {_render_one(v)}" for k, v in value.items()) or "{}"
    return _render_one(value)


def _render_one(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, separators=(", ", ": "))


def _fields_table(fields: dict[str, Any]) -> Table:
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold cyan", no_wrap=True)
    table.add_column(overflow="fold")
    if not fields:
        table.add_row("-", "[dim]nothing changed[/]")
    for key, value in fields.items():
        table.add_row(key, escape(_render(value)))
    return table
