"""`forge budget show|extend`: a run's caps, its recorded spend, and raising the caps."""

from __future__ import annotations

import getpass
import math
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape

from schemas.error_codes import ErrorCode
from workers.cli.common import (
    VerbGroup,
    fail,
    out,
    refusal,
    refusal_code,
    run_async,
    settings,
    temporal_client,
)

if TYPE_CHECKING:
    from temporalio.client import Client
    from temporalio.service import RPCError

    from schemas.budget import BudgetState

budget_app = typer.Typer(
    cls=VerbGroup,
    help="A run's token and cost budget: see it, or extend it to unblock the run.",
    no_args_is_help=True,
)


def budget_line(budget: BudgetState) -> str:
    """One line of rich markup: spent against each cap, and why the run is blocked if it is."""
    spent, lim = budget.spent, budget.limits
    tokens = f"{spent.tokens:,}" + (f" / {lim.max_tokens:,}" if lim.max_tokens else "")
    cost = f"${spent.cost_usd:,.4f}" + (f" / ${lim.max_cost_usd:,.2f}" if lim.max_cost_usd else "")
    line = f"budget: {tokens} tokens · {cost} · {spent.model_calls} model calls"
    if budget.extensions:
        line += f" · extended {len(budget.extensions)}×"
    if budget.status == "exhausted":
        line += (
            f"\n[red]blocked: budget exhausted[/] — {escape(budget.blocked_reason or '')}"
            f"\n  waiting steps: {', '.join(budget.blocked_steps)}"
        )
    return line


def _positive_or_zero(name: str, value: float) -> None:
    if not math.isfinite(value) or value < 0:
        fail(
            f"{name} must be a finite amount of 0 or more, not {value:g}",
            "an extension only adds to the cap; nothing changed",
            code=ErrorCode.USAGE_INVALID,
        )


def extend_cmd(
    run_id: Annotated[str, typer.Argument(metavar="RUN")],
    tokens: Annotated[int, typer.Option("--tokens", help="Tokens to add to the cap.")] = 0,
    cost: Annotated[float, typer.Option("--cost", help="USD to add to the cost cap.")] = 0.0,
    actor_id: Annotated[
        str | None, typer.Option("--as", help="Your id (default: your login name).")
    ] = None,
    role: Annotated[str, typer.Option("--role", help="The role you act in.")] = "operator",
    reason: Annotated[
        str, typer.Option("--reason", help="Why; recorded with the extension.")
    ] = "budget extended from the CLI",
) -> None:
    """Raise a run's caps; a run blocked in budget_exhausted goes on when there is room."""
    from temporalio.client import WorkflowUpdateFailedError
    from temporalio.service import RPCError

    from activities.store.admissions import open_admissions
    from schemas import names
    from schemas.budget import BudgetState, ExtendBudgetInput
    from schemas.events import Actor
    from workers.services.runs import connect
    from workflows.run import CompiledRunWorkflow

    _positive_or_zero("--tokens", tokens)
    _positive_or_zero("--cost", cost)
    if tokens == 0 and cost == 0:
        fail("give --tokens N, --cost USD or both", "nothing changed", code=ErrorCode.USAGE_INVALID)
    try:
        who = actor_id or getpass.getuser()
    except (KeyError, OSError):
        fail(
            "cannot tell who you are from the system",
            "give --as ID (it is recorded)",
            code=ErrorCode.USAGE_INVALID,
        )
    inp = ExtendBudgetInput(
        tokens=tokens,
        cost_usd=cost,
        reason=reason,
        actor=Actor(id=who, name=who, role=role, kind="human"),
    )
    s = settings()

    async def go() -> None:
        import asyncio

        client = await connect(s)
        handle = client.get_workflow_handle_for(CompiledRunWorkflow.run, run_id)
        taken = await _take_from_quota(client, run_id, tokens)
        try:
            state = await handle.execute_update(names.EXTEND_BUDGET, inp, result_type=BudgetState)
        except (WorkflowUpdateFailedError, RPCError) as exc:
            if taken is not None:  # give the tenant's tokens back: the run did not get them
                with open_admissions(s.database_url) as store:
                    now = datetime.now(UTC)
                    await asyncio.to_thread(store.extend, taken, run_id, -tokens, now)
            if isinstance(exc, WorkflowUpdateFailedError):
                fail(
                    f"extension refused: {refusal(exc)}",
                    "nothing changed",
                    code=refusal_code(exc, ErrorCode.EXTENSION_REFUSED),
                )
            fail(
                f"cannot extend the budget of run {run_id}: {exc.message}",
                "nothing changed",
                code=_rpc_code(exc),
            )
        out.print(f"[green]✓[/] {run_id} extended by {who}")
        out.print(budget_line(state))

    run_async(go())


async def _take_from_quota(client: Client, run_id: str, tokens: int) -> str | None:
    """Take `tokens` from the day's quota of the run's tenant; its tenant, None if none taken.

    A run admitted under a daily token quota cannot be given more than its tenant has left.
    """
    import asyncio

    from temporalio.service import RPCError

    from activities.store.admissions import QuotaExceeded, open_admissions

    if tokens == 0:
        return None
    try:
        described = await client.get_workflow_handle(run_id).describe()
        tenant = await described.memo_value("tenant", default=None)
    except RPCError:
        return None  # no such run: the update says so
    if not isinstance(tenant, str):
        return None
    with open_admissions(settings().database_url) as store:
        try:
            took = await asyncio.to_thread(store.extend, tenant, run_id, tokens, datetime.now(UTC))
        except QuotaExceeded as exc:
            fail(f"extension refused: {exc.message}", "nothing changed", code=exc.code)
    return tenant if took else None


def _rpc_code(exc: RPCError) -> ErrorCode:
    """Temporal's answer to an update of a run that is not running: ended, or no such run."""
    from temporalio.service import RPCStatusCode

    if exc.status != RPCStatusCode.NOT_FOUND:
        return ErrorCode.DEV_SERVER  # Temporal did not answer the update: unreachable, refused
    return ErrorCode.RUN_ENDED if "already completed" in exc.message else ErrorCode.NOT_FOUND


def show_cmd(run_id: Annotated[str, typer.Argument(metavar="RUN")]) -> None:
    """A run's caps and recorded spend."""
    from temporalio.service import RPCError

    from workers.services import run_reads

    s = settings()

    async def go() -> None:
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
        budget = view.budget if view else result.budget if result else None
        state = run_reads.run_state(status, view, result)  # as `forge status` says it
        if budget is None:
            fail(f"run {run_id} is {state}: it recorded no budget state", code=ErrorCode.NOT_FOUND)
        out.print(f"run [bold]{run_id}[/]: {state}")
        out.print(budget_line(budget))

    run_async(go())


budget_app.command("extend")(extend_cmd)
budget_app.command("show")(show_cmd)
