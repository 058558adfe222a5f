"""`forge run|status|watch|runs|cancel|artifacts|receipts|worker`: running compiled plans."""

import asyncio
import concurrent.futures
import logging
import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Group
from rich.live import Live
from rich.markup import escape
from rich.progress import BarColumn, Progress, TextColumn
from rich.table import Table
from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.service import RPCError
from temporalio.worker import Worker

from activities.sandbox.workspace import WorkspaceViolation
from activities.store.artifacts import open_artifact_store
from activities.store.errors import StoreError
from activities.store.events import open_event_store
from compiler.errors import CompilerError
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from schemas.budget import BudgetLimits
from schemas.receipts import Receipt
from schemas.run import RecipeView, RunInput, RunResult, RunStatusView, StepState
from workers import runs
from workers.cli.budget import budget_line
from workers.cli.common import compile_context, fail, out, read_json, reject_plan, settings
from workers.devserver import DevServerError
from workers.settings import Settings
from workers.worker import Services, build_worker
from workflows.run import CompiledRunWorkflow

EXIT_RUN_FAILED = 1
_STYLE = {
    "pending": "dim",
    "in_progress": "yellow",
    "done": "green",
    "error": "red",
    "skipped": "magenta",
}


def _parse_inputs(pairs: list[str]) -> dict[str, Path]:
    given: dict[str, Path] = {}
    for pair in pairs:
        name, sep, path = pair.partition("=")
        if not sep or not name or not path:
            fail(f"--input {pair!r}: expected NAME=PATH, e.g. --input time_entries=data.csv")
        given[name] = Path(path)
    return given


def run_cmd(
    plan_file: Annotated[Path | None, typer.Argument(metavar="[PLAN.json]")] = None,
    objective: Annotated[
        str | None,
        typer.Option(
            "--objective",
            "-o",
            metavar="TEXT",
            help='Run an objective instead of a plan (also: `forge run "TEXT"`): a clearly '
            "matching recipe becomes the plan, else the planner model writes one.",
        ),
    ] = None,
    inputs: Annotated[
        list[str] | None,
        typer.Option(
            "--input",
            "-i",
            metavar="NAME=PATH",
            help="A run input: declared by the plan, or for an objective, put at input/NAME.ext.",
        ),
    ] = None,
    profile: Annotated[str | None, typer.Option("--profile", "-p")] = None,
    detach: Annotated[
        bool,
        typer.Option("--detach", help="Start the run and return; watch it with `forge watch RUN`."),
    ] = False,
    max_tokens: Annotated[
        int | None,
        typer.Option("--max-tokens", min=1, help="Token cap for this run (default: profile's)."),
    ] = None,
    max_cost: Annotated[
        float | None,
        typer.Option("--max-cost", min=0.0001, help="USD cap for this run (default: profile's)."),
    ] = None,
) -> None:
    """Compile PLAN.json (or match --objective to a recipe), run it on Temporal, show it live."""
    s = settings()
    if max_cost is not None and not math.isfinite(max_cost):
        fail(f"--max-cost must be a finite amount of USD, not {max_cost}")
    if plan_file is not None and objective is None and runs.looks_like_objective(plan_file):
        # `forge run "OBJECTIVE" --input NAME=PATH`: text that names no plan file is the objective.
        objective, plan_file = str(plan_file), None
    if (plan_file is None) == (objective is None):
        fail(
            "give a plan file or an objective (exactly one)",
            'e.g. `forge run plan.json` or `forge run "reconcile invoices and rate cards"`',
        )
    if objective is not None:
        if not objective.strip():
            fail("the objective is empty: say what the run should do")
        services = Services.from_settings(s)
        try:
            refs = runs.bind_objective_inputs(_parse_inputs(inputs or []), services.artifacts)
        except runs.PlanFileError as exc:
            fail(str(exc))
        limits = BudgetLimits(max_tokens=max_tokens, max_cost_usd=max_cost)
        run = RunInput(
            run_id=runs.new_run_id(),
            objective=objective,
            inputs=refs,
            profile_ref=profile,
            budget=limits if max_tokens or max_cost else None,
        )
        out.print(f"run [bold]{run.run_id}[/]: matching the objective to a recipe or the planner …")
        raise typer.Exit(asyncio.run(_run(s, services, run, detach)))
    assert plan_file is not None
    try:
        document = runs.load_plan_document(plan_file, read_json(plan_file))
    except runs.PlanFileError as exc:
        fail(str(exc))
    ctx = compile_context(profile)
    try:  # compile here first: a rejected plan never reaches Temporal
        candidate = parse_candidate(document)
        compiled = compile_plan(candidate, ctx=ctx)
    except CompilerError as exc:
        reject_plan(exc, str(plan_file))
    services = Services.from_settings(s)
    try:
        refs = runs.bind_inputs(candidate, _parse_inputs(inputs or []), services.artifacts)
    except runs.PlanFileError as exc:
        fail(str(exc))
    plan_ref = services.artifacts.put_bytes(
        runs.plan_bytes(document),
        logical_path=f"meta/plans/{plan_file.name}",
        media_type="application/json",
    )
    budgets = compiled.profile_snapshot.profile.budgets
    run = RunInput(
        run_id=runs.new_run_id(),
        plan_ref=plan_ref,
        inputs=refs,
        budget=BudgetLimits(
            max_tokens=max_tokens or budgets.max_tokens_per_run,
            max_cost_usd=max_cost or budgets.max_cost_usd_per_run,
        )
        if max_tokens or max_cost
        else None,
        profile_ref=compiled.profile_snapshot.profile_id if ctx.profile_ref else None,
        profile_document=(
            compiled.profile_snapshot.profile.model_dump(mode="json")
            if compiled.profile_snapshot.scope == "run"
            else None
        ),
    )
    out.print(
        f"compiled {len(compiled.steps)} steps · plan {compiled.plan_hash[:19]}… · "
        f"run [bold]{run.run_id}[/]"
    )
    code = asyncio.run(_run(s, services, run, detach))
    raise typer.Exit(code)


async def _run(s: Settings, services: Services, run: RunInput, detach: bool) -> int:
    return await _run_started(await _client(s), s, services, run, detach)


async def _run_started(
    client: Client, s: Settings, services: Services, run: RunInput, detach: bool
) -> int:
    if detach:
        await runs.start_run(client, s, run)
        out.print(
            f"started [bold]{run.run_id}[/] on task queue {s.task_queue}. "
            f"Follow it with `forge watch {run.run_id}`."
        )
        if s.temporal_address is None:
            out.print(
                "[yellow]note:[/] the embedded default has no standing worker; run "
                "`forge worker` in another terminal so the run makes progress."
            )
        return 0
    # The in-process worker's "activity failed" warnings (with tracebacks) would interleave
    # with the live view, which already reports each failed step with its class and reason.
    logging.getLogger("temporalio.activity").setLevel(logging.ERROR)
    with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
        async with _worker(client, s, services, pool):
            handle = await runs.start_run(client, s, run)
            return await _follow(handle, s, services)


def _worker(
    client: Client, s: Settings, services: Services, pool: concurrent.futures.Executor
) -> Worker:
    try:
        return build_worker(client, s, services, pool)
    except WorkspaceViolation as exc:
        fail(f"workspace root {exc}")


async def _client(s: Settings) -> Client:
    try:
        return await runs.connect(s)
    except DevServerError as exc:
        fail(exc.message, exc.detail)
    except RuntimeError as exc:
        fail(
            f"cannot reach Temporal: {exc}",
            "check FORGE_TEMPORAL_ADDRESS, or unset it to use the embedded dev server",
        )


async def _follow(
    handle: WorkflowHandle[CompiledRunWorkflow, RunResult], s: Settings, services: Services
) -> int:
    """Live view until the run ends; then the outputs and where they are."""
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
                live.update(
                    Group(
                        progress,
                        *recipe_lines(view.recipes),
                        steps_table(view.steps, view.badges),
                        budget_line(view.budget),
                    )
                )
            await asyncio.wait([result_task], timeout=0.5)
    try:
        result = result_task.result()
    except WorkflowFailureError as exc:
        out.print(f"[red]run failed:[/] {escape(str(exc.cause or exc))}")
        return EXIT_RUN_FAILED
    return _report(result, s, services)


def _report(result: RunResult, s: Settings, services: Services) -> int:
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
        out.print(f"[red]run {result.run_id} {result.status}[/]")
        return EXIT_RUN_FAILED
    try:
        paths = runs.export_outputs(s, services.artifacts, result)
    except (OSError, StoreError) as exc:
        fail(
            f"run {result.run_id} completed, but its outputs could not be copied out: {exc}",
            f"fetch them with `forge artifacts get {result.run_id} PATH -o FILE`",
        )
    table = Table(title=f"outputs of {result.run_id}", title_justify="left")
    for col in ("path", "size", "sha256", "copied to"):
        table.add_column(col, overflow="fold")
    for ref, dest in zip(result.outputs, paths, strict=True):
        table.add_row(ref.path, f"{ref.size_bytes:,}", ref.sha256[7:19], str(dest))
    out.print(table)
    out.print(f"[green]✓[/] run {result.run_id} completed")
    return 0


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
        style = _STYLE.get(st.status, "")
        badge = [(badges or {}).get(st.step_key, "")] if badges else []
        table.add_row(
            st.step_key,
            *badge,
            f"[{style}]{st.status}[/]",
            str(st.attempts or ""),
            duration,
            f"{st.usage.tokens:,}" if st.usage.tokens else "",
            escape(detail),
        )
    return table


def status_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """A run's steps: state, attempts, timings, outputs or the reason they failed."""
    s = settings()
    code = asyncio.run(_status(s, run_id))
    raise typer.Exit(code)


async def _status(s: Settings, run_id: str) -> int:
    client = await _client(s)
    try:
        status, view, result = await runs.describe(client, run_id)
    except LookupError as exc:
        fail(str(exc))
    except RPCError as exc:
        fail(
            f"{run_id} is running but could not be queried: {exc.message}",
            f"is a worker polling task queue {s.task_queue}? start one with `forge worker`",
        )
    shown = view.status if view is not None else result.status if result else status.lower()
    out.print(f"run [bold]{run_id}[/]: {shown}")
    if view is not None:
        for line in recipe_lines(view.recipes):
            out.print(line)
        out.print(steps_table(view.steps, view.badges))
        out.print(budget_line(view.budget))
    elif result is not None:
        for line in recipe_lines(result.recipes):
            out.print(line)
        out.print(steps_table(list(result.steps.values()), result.badges))
        out.print(budget_line(result.budget))
    return (
        0
        if status in ("RUNNING", "COMPLETED") and (result is None or result.status == "completed")
        else 1
    )


def watch_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Follow a running run live until it ends."""
    s = settings()

    async def go() -> int:
        client = await _client(s)
        handle = client.get_workflow_handle_for(CompiledRunWorkflow.run, run_id)
        try:
            await handle.describe()
        except RPCError as exc:
            fail(f"no run {run_id!r}: {exc.message}", "list runs with `forge runs`")
        return await _follow(handle, s, Services.from_settings(s))

    raise typer.Exit(asyncio.run(go()))


def runs_cmd(
    status: Annotated[
        str | None,
        typer.Option("--status", help="running, completed, failed, cancelled, terminated"),
    ] = None,
    limit: Annotated[int, typer.Option("--limit")] = 50,
) -> None:
    """Recent runs, newest first."""
    s = settings()
    query = f'WorkflowType = "{CompiledRunWorkflow.__name__}"'
    if status:
        names = {
            "running": "Running",
            "completed": "Completed",
            "failed": "Failed",
            "cancelled": "Canceled",
            "terminated": "Terminated",
        }
        if status not in names:
            fail(f"--status {status!r}: use one of {', '.join(names)}")
        query += f' AND ExecutionStatus = "{names[status]}"'

    async def go() -> None:
        client = await _client(s)
        table = Table(title="runs", title_justify="left")
        for col in ("run", "status", "started", "closed"):
            table.add_column(col)
        n = 0
        async for wf in client.list_workflows(query):
            table.add_row(
                wf.id,
                wf.status.name.lower() if wf.status else "?",
                f"{wf.start_time:%Y-%m-%d %H:%M:%S}",
                f"{wf.close_time:%H:%M:%S}" if wf.close_time else "",
            )
            n += 1
            if n >= limit:
                break
        out.print(table)

    asyncio.run(go())


def cancel_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Ask a run to stop; steps in flight are cancelled, nothing published is taken back."""
    s = settings()

    async def go() -> None:
        client = await _client(s)
        try:
            await client.get_workflow_handle(run_id).cancel()
        except RPCError as exc:
            fail(f"cannot cancel {run_id}: {exc.message}")
        out.print(f"cancellation requested for {run_id}")

    asyncio.run(go())


def artifacts_cmd(
    words: Annotated[list[str], typer.Argument(metavar="RUN | get RUN PATH")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="Where to write.")] = None,
) -> None:
    """`forge artifacts RUN` lists published outputs; `forge artifacts get RUN PATH -o FILE`."""
    s = settings()
    events = open_event_store(s.database_url)
    if words[0] == "get":
        if len(words) != 3 or output is None:
            fail("usage: forge artifacts get RUN PATH -o FILE")
        _, run_id, path = words
        latest = events.latest(run_id, path)
        if latest is None:
            fail(f"{run_id} published nothing at {path}", f"see `forge artifacts {run_id}`")
        try:
            output.parent.mkdir(parents=True, exist_ok=True)
            open_artifact_store(s.artifacts_url, s3_endpoint=s.s3_endpoint).get_to_file(
                latest.sha256, output
            )
        except (OSError, StoreError) as exc:
            fail(f"cannot write {output}: {exc}")
        out.print(f"[green]✓[/] {path} (v{latest.version}, {latest.size_bytes:,} bytes) → {output}")
        return
    if len(words) != 1:
        fail("usage: forge artifacts RUN, or forge artifacts get RUN PATH -o FILE")
    published = events.list_published(words[0])
    if not published:
        fail(f"run {words[0]!r} has published no artifacts")
    table = Table(title=f"artifacts of {words[0]}", title_justify="left")
    for col in ("path", "version", "size", "sha256", "step", "contract"):
        table.add_column(col, overflow="fold")
    for p in published:
        table.add_row(
            p.path,
            str(p.version),
            f"{p.size_bytes:,}",
            p.sha256[7:19],
            p.step_key,
            p.contract_hash[7:19],
        )
    out.print(table)


def receipts_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    step_key: Annotated[str, typer.Argument(metavar="STEP")],
) -> None:
    """The preflight and postflight receipts of a step: hashes, parse checks, schema summaries."""
    s = settings()
    events = open_event_store(s.database_url)
    store = open_artifact_store(s.artifacts_url, s3_endpoint=s.s3_endpoint)
    found = [
        e
        for e in events.read_stream(f"{run_id}:step:{step_key}")
        if e.type in ("step.receipt.preflight.v1", "step.receipt.postflight.v1")
    ]
    if not found:
        fail(
            f"no receipts for step {step_key!r} of run {run_id!r}",
            f"check the step key with `forge status {run_id}`",
        )
    for event in found:
        ref = event.payload["receipt_ref"]
        try:
            raw = store.read_bytes(ref["sha256"], 16 * 1024 * 1024)
        except StoreError as exc:
            fail(
                f"the {event.type} receipt of {step_key} is not in the artifact store: {exc}",
                "check FORGE_ARTIFACTS_URL points at the store this run used",
            )
        receipt = Receipt.model_validate_json(raw)
        table = Table(
            title=f"{receipt.phase} · attempt {event.payload.get('attempt', '?')}"
            f" · {receipt.step_key} · {receipt.contract_hash[:19]}…",
            title_justify="left",
        )
        for col in ("path", "exists", "size", "sha256", "parse", "summary", "placeholders"):
            table.add_column(col, overflow="fold")
        for f in receipt.files:
            parse = (
                "ok"
                if f.parse_validation and f.parse_validation.ok
                else (f.parse_validation.error if f.parse_validation else "-")
            )
            table.add_row(
                f.path,
                "yes" if f.exists else "[red]no[/]",
                f"{f.size_bytes:,}" if f.size_bytes is not None else "-",
                (f.sha256 or "-")[7:19],
                escape(str(parse)),
                escape(_summary(f.schema_summary)),
                ", ".join(f.placeholder_sentinels) or "-",
            )
        out.print(table)


def _summary(summary: dict[str, Any]) -> str:
    if "columns" in summary:
        cols = ", ".join(f"{c['name']}:{c['type']}" for c in summary["columns"][:8])
        return f"{summary.get('row_count', '?')} rows; {cols}"
    return ", ".join(f"{k}={v}" for k, v in list(summary.items())[:4])


def worker_cmd() -> None:
    """Run a worker for the task queue until interrupted (Ctrl-C)."""
    s = settings()

    async def go() -> None:
        client = await _client(s)
        services = Services.from_settings(s)
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            worker = _worker(client, s, services, pool)
            out.print(
                f"worker polling task queue [bold]{s.task_queue}[/] "
                f"(namespace {s.namespace}); Ctrl-C to stop"
            )
            await worker.run()

    try:
        asyncio.run(go())
    except KeyboardInterrupt:
        out.print("worker stopped")


def resume_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    from_step: Annotated[
        str | None,
        typer.Option(
            "--from", metavar="STEP", help="Re-run this step and everything downstream of it."
        ),
    ] = None,
    detach: Annotated[bool, typer.Option("--detach")] = False,
) -> None:
    """Run RUN's plan again, reusing completed steps whose contract and inputs are unchanged.

    Reused outputs are verified in the store, not re-executed; the rest runs again.
    """
    s = settings()
    services = Services.from_settings(s)

    async def go() -> int:
        client = await _client(s)
        ctx = compile_context(None)
        try:
            run = await runs.resume_input(client, services, run_id, from_step, ctx)
        except runs.PlanFileError as exc:
            fail(str(exc))
        except CompilerError as exc:
            reject_plan(exc, f"the plan of {run_id}")
        names = ", ".join(r.step_key for r in run.reusable) or "none"
        out.print(f"resuming {run_id} as [bold]{run.run_id}[/]; may reuse: {names}")
        return await _run_started(client, s, services, run, detach)

    raise typer.Exit(asyncio.run(go()))
