"""The live views of a run: progress and steps table while it runs, its outputs when done."""

from __future__ import annotations

import shlex
from typing import TYPE_CHECKING

from rich.console import Group, RenderableType
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from rich.text import Text

from schemas.error_codes import ErrorCode
from workers.cli.budget import budget_line
from workers.cli.common import fail, out

if TYPE_CHECKING:
    from temporalio.client import WorkflowHandle

    from schemas.run import RecipeView, RunResult, RunStatusView, StepState
    from workers.process.worker import Services
    from workers.settings import Settings
    from workflows.run import CompiledRunWorkflow

EXIT_RUN_FAILED = 1
# One style per StepStatus (a test holds them equal): an unstyled status once broke the markup.
STEP_STYLES: dict[str, str] = {
    "pending": "dim",
    "awaiting_approval": "bold cyan",
    "in_progress": "yellow",
    "done": "green",
    "error": "red",
    "skipped": "magenta",
}


async def follow(
    handle: WorkflowHandle[CompiledRunWorkflow, RunResult], s: Settings, services: Services
) -> int:
    """Live view until the run ends; then the outputs and where they are."""
    import asyncio

    from temporalio.client import WorkflowFailureError
    from temporalio.service import RPCError

    from workers.services.run_reads import failure_text
    from workflows.run import CompiledRunWorkflow

    result_task = asyncio.ensure_future(handle.result())
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} steps"),
        transient=False,
    )
    bar = progress.add_task("running", total=None)
    view: RunStatusView | None = None
    with Live(progress, console=out, refresh_per_second=4, transient=True) as live:
        while not result_task.done():
            try:
                view = await handle.query(CompiledRunWorkflow.status)
            except (RPCError, WorkflowFailureError):
                view = None
            if view is not None:
                finished = sum(st.status in ("done", "error", "skipped") for st in view.steps)
                progress.update(
                    bar,
                    total=len(view.steps) or None,
                    completed=finished,
                    description=f"{view.run_id} {view.status}",
                )
                live.update(Group(progress, *view_lines(view)))
            await asyncio.wait([result_task], timeout=0.5)
    try:
        result = result_task.result()
    except WorkflowFailureError as exc:
        out.print(f"[red]run failed:[/] {escape(failure_text(exc))}")
        return EXIT_RUN_FAILED
    return _report(result, s, services)


def _report(result: RunResult, s: Settings, services: Services) -> int:
    from activities.store.errors import StoreError
    from workers.services import runs

    for line in recipe_lines(result.recipes):
        out.print(line)
    if result.recipes.effort is not None and not result.steps and result.status == "completed":
        out.print(f"[green]✓[/] run {result.run_id}: nothing to run (a trivial objective)")
        return 0
    out.print(steps_table(list(result.steps.values()), result.badges))
    for key, reason in result.skipped_steps.items():
        out.print(f"[magenta]skipped[/] {key}: {reason}")
    if result.status != "completed":
        for key in result.failed_steps:
            err = result.steps[key].error
            if err:
                out.print(f"[red]{key} failed[/] ({err.failure_class}): {escape(err.message)}")
        out.print(run_outcome(result))
        return EXIT_RUN_FAILED
    try:
        paths = runs.export_outputs(s, services.artifacts, result)
    except (OSError, StoreError) as exc:
        fail(
            f"run {result.run_id} completed, but its outputs could not be copied out: {exc}",
            f"fetch them with `forge artifacts get {result.run_id} PATH -o FILE`",
            code=exc.code if isinstance(exc, StoreError) else ErrorCode.FILE_UNUSABLE,
        )
    table = Table(title=f"outputs of {result.run_id}", title_justify="left")
    for col in ("path", "size", "sha256", "copied to"):
        table.add_column(col, overflow="fold")
    for ref, dest in zip(result.outputs, paths, strict=True):
        table.add_row(ref.path, f"{ref.size_bytes:,}", ref.sha256[7:19], str(dest))
    out.print(table)
    out.print(f"[green]✓[/] run {result.run_id} completed")
    return 0


def run_outcome(result: RunResult) -> str:
    """How a run that did not complete ended, with the reason when it ended before any step."""
    why = f": {escape(result.error)}" if result.error else ""
    return f"[red]run {result.run_id} {result.status}[/]{why}"


def view_lines(view: RunStatusView) -> list[RenderableType]:
    """What a run shows while it runs: trail, steps, budget, and the gates it waits at."""
    return [
        *recipe_lines(view.recipes),
        steps_table(view.steps, view.badges),
        budget_line(view.budget),
        *waiting_lines(view),
    ]


def waiting_lines(view: RunStatusView) -> list[str]:
    """Each gate the run waits at: its steps, who may decide, and the commands that do."""
    lines = []
    for gate in view.gates:
        if gate.status != "pending":
            continue
        gate_id, role = gate.spec.gate_id, gate.approver_role
        steps = ", ".join(gate.spec.gated_step_keys)
        # Quoted for the shell: ids and roles come from the plan, which a model may have written.
        run, gate_arg, role_arg = (shlex.quote(x) for x in (view.run_id, gate_id, role))
        decide = f"{run} {gate_arg} --as NAME --role {role_arg} --reason TEXT"
        asks = f": {escape(gate.spec.prompt)}" if gate.spec.prompt else ""
        lines.append(
            f"[bold cyan]waiting[/] at {escape(gate_id)} (step {escape(steps)}) for a decision "
            f"by role [bold]{escape(role)}[/]{asks}"
        )
        lines.append(f"  decide: [bold]forge approve {escape(decide)}[/]")
        lines.append(f"      or: [bold]forge reject {escape(decide)}[/] [--request-changes]")
        lines.append(f"  evidence: forge gates (the inbox), forge status {view.run_id}")
    return lines


def recipe_lines(view: RecipeView, *, last: int = 6) -> list[str]:
    """Effort, the seeding recipe and the latest decision-trail lines (compact)."""
    if view.effort is None and not view.trail:
        return []
    head = []
    if view.effort is not None:
        head.append(f"effort [bold]{view.effort.tier}[/]")
    if view.seeded_by:
        head.append(f"recipe [bold]{view.seeded_by}[/]")
    lines = [" · ".join(head)] if head else []
    hidden = view.recorded - min(len(view.trail), last)
    if hidden > 0:
        lines.append(f"[dim]  … {hidden} earlier trail entries (forge events RUN)[/]")
    for entry in view.trail[-last:]:
        lines.append(f"  [cyan]{entry.verb:<10}[/] {escape(entry.summary)}")
    return lines


def steps_table(states: list[StepState], badges: dict[str, str] | None = None) -> Table:
    table = Table(show_header=True, title_justify="left")
    columns = ["step", "status", "attempts", "duration", "tokens", "detail"]
    if badges:
        columns.insert(1, "recipe")
    for col in columns:
        table.add_column(col, overflow="fold")
    for st in states:
        duration = ""
        if st.started_at and st.finished_at:
            duration = f"{(st.finished_at - st.started_at).total_seconds():.1f}s"
        detail = ""
        if st.error:
            detail = f"{st.error.failure_class}: {st.error.message}"
        elif st.skipped_because:
            detail = st.skipped_because
        elif st.outputs:
            detail = ", ".join(o.path for o in st.outputs)
        if st.iterations:
            detail = f"{st.iterations} pass(es); " + detail
        badge = [(badges or {}).get(st.step_key, "")] if badges else []
        table.add_row(
            escape(st.step_key),
            *badge,
            Text(st.status, style=STEP_STYLES.get(st.status, "")),
            str(st.attempts or ""),
            duration,
            f"{st.usage.tokens:,}" if st.usage.tokens else "",
            escape(detail),
        )
    return table
