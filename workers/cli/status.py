"""`forge status|watch|runs|cancel`: the runs on Temporal, one or all, and stopping one."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from workers.cli.budget import budget_line
from workers.cli.common import fail, out, run_async, settings, temporal_client
from workers.cli.views import follow, recipe_lines, run_outcome, steps_table, view_lines

if TYPE_CHECKING:
    from temporalio.client import WorkflowExecutionStatus

    from workers.process.worker import Services
    from workers.settings import Settings


def status_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """A run's steps: state, attempts, timings, outputs or the reason they failed."""
    s = settings()
    code = run_async(_status(s, run_id))
    raise typer.Exit(code)


async def _status(s: Settings, run_id: str) -> int:
    from temporalio.service import RPCError

    from workers.services import run_reads

    client = await temporal_client(s, read_only=True)
    try:
        status, view, result = await run_reads.describe(client, run_id)
    except LookupError as exc:
        fail(str(exc), "list runs with `forge runs`", code=ErrorCode.NOT_FOUND)
    except RPCError as exc:
        fail(
            f"{run_id} is running but could not be queried: {exc.message}",
            f"is a worker polling task queue {s.task_queue}? start one with `forge worker`",
            code=ErrorCode.WORKER_UNAVAILABLE,
        )
    shown = run_reads.run_state(status, view, result)
    why = ""
    if view is None and result is None and status != "RUNNING":
        # It ended before it had steps to show (while planning or compiling): say why.
        try:
            reason = await run_reads.failure(client, run_id)
        except RPCError as exc:
            reason = f"(its failure could not be read: {exc.message})"
        why = f": {escape(reason)}" if reason else ""
    out.print(f"run [bold]{run_id}[/]: {shown}{why}")
    if view is not None:
        for renderable in view_lines(view):
            out.print(renderable)
    elif result is not None:
        for line in recipe_lines(result.recipes):
            out.print(line)
        out.print(steps_table(list(result.steps.values()), result.badges))
        out.print(budget_line(result.budget))
        if result.status != "completed":
            out.print(run_outcome(result))
    return (
        0
        if status in ("RUNNING", "COMPLETED") and (result is None or result.status == "completed")
        else 1
    )


def watch_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Follow a running run live until it ends."""
    from temporalio.service import RPCError

    from workers.process.worker import Services
    from workflows.run import CompiledRunWorkflow

    s = settings()

    async def go() -> int:
        client = await temporal_client(s)
        handle = client.get_workflow_handle_for(CompiledRunWorkflow.run, run_id)
        try:
            await handle.describe()
        except RPCError as exc:
            fail(
                f"no run {run_id!r}: {exc.message}",
                "list runs with `forge runs`",
                code=ErrorCode.NOT_FOUND,
            )
        return await follow(handle, s, Services.from_settings(s))

    raise typer.Exit(run_async(go()))


def runs_cmd(
    status: Annotated[
        str | None,
        typer.Option("--status", help="running, completed, failed, cancelled, terminated"),
    ] = None,
    limit: Annotated[int, typer.Option("--limit")] = 50,
) -> None:
    """Recent runs, newest first."""
    from workers.process.worker import Services
    from workers.services import run_reads

    s = settings()
    kept: str | None = None
    if status:
        names = {
            "running": "Running",
            "completed": "Completed",
            "failed": "Failed",
            "cancelled": "Canceled",
            "terminated": "Terminated",
        }
        if status not in names:
            fail(
                f"--status {status!r}: use one of {', '.join(names)}", code=ErrorCode.USAGE_INVALID
            )
        # A run whose steps failed completes its workflow: both are read, the log decides.
        closed = "Completed" if status in ("completed", "failed") else names[status]
        kept = f'"{closed}", "{names[status]}"'
    query = run_reads.list_query(kept)

    async def go() -> None:
        client = await temporal_client(s, read_only=True)
        table = Table(title="runs", title_justify="left")
        for col in ("run", "status", "started", "closed"):
            table.add_column(col)
        n = 0
        services = Services.from_settings(s)
        async for wf in client.list_workflows(query):
            outcome = run_outcome_of(wf.id, wf.status, services)
            if status is not None and outcome != status:
                continue
            table.add_row(
                wf.id,
                outcome,
                f"{wf.start_time:%Y-%m-%d %H:%M:%S}",
                f"{wf.close_time:%H:%M:%S}" if wf.close_time else "",
            )
            n += 1
            if n >= limit:
                break
        out.print(table)

    run_async(go())


def run_outcome_of(run_id: str, status: WorkflowExecutionStatus | None, services: Services) -> str:
    """What became of a run: Forge's outcome, not its workflow's.

    A run whose steps failed (or whose gate was rejected) ends its workflow normally, with a
    failed RunResult; the event log's run.failed.v1 says so.
    """
    from temporalio.client import WorkflowExecutionStatus

    from schemas.event_catalogue import RUN_FAILED

    if status is None:
        return "?"
    if status == WorkflowExecutionStatus.COMPLETED:
        # `forge runs` lists every tenant's runs: the run's tenant is looked up by its id.
        tenant = services.events.run_tenant(run_id)
        failed = tenant is not None and services.events.list_events(
            run_id=run_id, type=RUN_FAILED, tenant_id=tenant, limit=1
        )
        return "failed" if failed else "completed"
    return {"CANCELED": "cancelled"}.get(status.name, status.name.lower())


def cancel_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """Ask a run to stop; steps in flight are cancelled, nothing published is taken back."""
    from temporalio.client import WorkflowExecutionStatus
    from temporalio.service import RPCError

    s = settings()

    async def go() -> None:
        client = await temporal_client(s)
        handle = client.get_workflow_handle(run_id)
        try:
            described = await handle.describe()
            if described.status != WorkflowExecutionStatus.RUNNING:
                ended = described.status.name.lower() if described.status else "ended"
                fail(
                    f"cannot cancel {run_id}: it already ended ({ended}); nothing was changed",
                    f"see how with `forge status {run_id}`",
                    code=ErrorCode.RUN_ENDED,
                )
            await handle.cancel()
        except RPCError as exc:
            fail(
                f"cannot cancel {run_id}: {exc.message}",
                "list runs with `forge runs`",
                code=ErrorCode.NOT_FOUND,
            )
        out.print(f"cancellation requested for {run_id}")

    run_async(go())
