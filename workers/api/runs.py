"""`/v1/runs`: start a run, list the tenant's runs, follow one, cancel it, read its events.

Submission is workers/services/runs.py, the CLI's own code: a plan compiles here first (a rejected
plan never reaches Temporal), inputs are stored in the tenant's artifact store, the run starts with
the key's actor in its scope. Another tenant's run answers 404, as one that does not exist.
"""

import asyncio
from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from compiler.run.logged import logged_state
from schemas.api import EventPage, RunAccepted, RunDetail, RunPage, RunRequest, RunSummary
from schemas.bounds import Position, PositionText
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED, RUN_STARTED
from schemas.events import Event
from schemas.run import RunInput
from workers.api.auth import Ctx, requires
from workers.api.context import ApiContext
from workers.api.idempotency import IdempotencyKey, once
from workers.api.inputs import materialized, param_strings
from workers.api.problems import problem_responses
from workers.api.tracing import TRACE_ID_HEADER, run_trace_id
from workers.services import quotas, run_reads, runs
from workers.services.access import Principal
from workers.services.capsule_runs import input_policy
from workers.telemetry import tracing

__all__ = ["router", "tenant_run"]

router = APIRouter(prefix="/v1", tags=["runs"])
_CLOSING = {RUN_COMPLETED: "completed", RUN_FAILED: "failed", RUN_CANCELLED: "cancelled"}
_SCAN = 200  # runs read per store query while a filtered page fills
# How long a run's own status query may take before the answer comes from its log instead: a
# run no worker serves would hold the request until Temporal gave up (issue 35 §2).
_QUERY_WAIT = timedelta(seconds=3)


async def tenant_run(ctx: ApiContext, who: Principal, run_id: str) -> None:
    """Pass if the run is the principal's tenant's; 404 otherwise (never 403).

    One event of the run is enough to know; a run started a moment ago may have none yet:
    its workflow's memo names its tenant.
    """
    found = await asyncio.to_thread(
        ctx.services.events.list_events, run_id=run_id, tenant_id=who.tenant, limit=1
    )
    if found:
        return
    try:
        described = await ctx.client.get_workflow_handle(run_id).describe()
        tenant = await described.memo_value("tenant", default=None)
    except RPCError:
        tenant = None
    if tenant != who.tenant:
        raise ForgeError(
            f"no run {run_id!r}",
            code=ErrorCode.NOT_FOUND,
            hint="list the tenant's runs with GET /v1/runs",
        )


def _prepare(ctx: ApiContext, who: Principal, body: RunRequest) -> tuple[RunInput, RunAccepted]:
    """Compile (a plan), store the inputs and build the RunInput, as `forge run` does."""
    s = ctx.settings
    scope = who.scope()
    policy = input_policy(s, ctx.services.tenant_settings.get(who.tenant), local=False)
    artifacts = ctx.services.artifacts
    with materialized(body.inputs, artifacts, scope, policy) as files:
        if body.plan is not None:
            plan = runs.check_plan(body.plan, ctx.compile_context(body.profile))
            run = runs.prepare_plan_run(
                plan,
                body.plan_name,
                files,
                artifacts,
                scope=scope,
                max_tokens=body.max_tokens,
                max_cost=body.max_cost_usd,
                params=param_strings(body.params),
            )
            accepted = RunAccepted(
                run_id=run.run_id,
                plan_hash=plan.compiled.plan_hash,
                steps=len(plan.compiled.steps),
                trace_id=run_trace_id(run.run_id),
            )
            return run, accepted
        assert body.objective is not None
        run = runs.prepare_objective_run(
            body.objective,
            files,
            artifacts,
            scope=scope,
            profile=body.profile,
            max_tokens=body.max_tokens,
            max_cost=body.max_cost_usd,
            params=param_strings(body.params),
        )
        return run, RunAccepted(run_id=run.run_id, trace_id=run_trace_id(run.run_id))


@router.post(
    "/runs",
    status_code=201,
    response_model=RunAccepted,
    responses=problem_responses(401, 403, 409, 422, 429),
    summary="Start a run from a plan or an objective",
)
async def start_run(
    body: RunRequest,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.start"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    async def act() -> tuple[int, RunAccepted]:
        await quotas.precheck(ctx.client, ctx.services.admissions, who.tenant)  # before copies
        run, accepted = await asyncio.to_thread(_prepare, ctx, who, body)
        await runs.start_run(ctx.client, ctx.settings, run, ctx.services.admissions)
        return 201, accepted

    response = await once(ctx, who, request, idempotency_key, body, act)
    # The accepted run (a replayed answer too, whose body once() kept) names its trace.
    if response.status_code == 201 and tracing.installed():
        accepted = RunAccepted.model_validate_json(bytes(response.body))
        if accepted.trace_id is not None:
            response.headers[TRACE_ID_HEADER] = accepted.trace_id
    return response


@router.get(
    "/runs",
    response_model=RunPage,
    responses=problem_responses(401, 403, 422),
    summary="The tenant's runs, newest first",
)
async def list_runs(
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.read"))],
    status: Annotated[str | None, Query(pattern="^(running|completed|failed|cancelled)$")] = None,
    capsule: Annotated[str | None, Query(description="only runs of this capsule")] = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
    cursor: Annotated[PositionText | None, Query(description="next_cursor of a page")] = None,
) -> RunPage:
    events = ctx.services.events
    before = int(cursor) if cursor else None
    found: list[tuple[int, RunSummary]] = []  # one more than asked: is there a next page?
    while len(found) <= limit:
        started = await asyncio.to_thread(
            events.page,
            who.tenant,
            type=RUN_STARTED,
            before=before,
            newest_first=True,
            limit=_SCAN,
        )
        outcomes = await asyncio.to_thread(_outcomes, ctx, who.tenant, [e for _, e in started])
        for seq, event in started:
            summary = _summary(event, outcomes)
            if (status is None or summary.status == status) and (
                capsule is None or (summary.capsule or "").split("@")[0] == capsule
            ):
                found.append((seq, summary))
        if len(started) < _SCAN:
            break
        before = started[-1][0]
    page = found[:limit]
    more = len(found) > limit
    return RunPage(
        runs=[summary for _, summary in page], next_cursor=str(page[-1][0]) if more else None
    )


def _outcomes(ctx: ApiContext, tenant: str, started: list[Event]) -> dict[str, str]:
    ids = [e.run_id for e in started if e.run_id]
    closing = ctx.services.events.list_events(
        tenant_id=tenant, run_ids=ids, types=list(_CLOSING), limit=10 * len(ids) + 10
    )
    return {e.run_id: _CLOSING[e.type] for e in closing if e.run_id}


def _summary(event: Event, outcomes: dict[str, str]) -> RunSummary:
    capsule = event.payload.get("capsule")
    run_id = event.run_id or ""
    return RunSummary(
        run_id=run_id,
        status=outcomes.get(run_id, "running"),
        started_at=event.timestamp,
        objective=event.payload.get("objective"),
        capsule=f"{capsule['name']}@{capsule['version']}" if capsule else None,
        actor=event.scope.actor.id,
    )


@router.get(
    "/runs/{run_id}",
    response_model=RunDetail,
    responses=problem_responses(401, 403, 404),
    summary="A run's status view",
)
async def get_run(
    run_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("runs.read"))]
) -> RunDetail:
    await tenant_run(ctx, who, run_id)
    try:
        status, view, result = await run_reads.describe(
            ctx.client, run_id, query_timeout=_QUERY_WAIT
        )
    except LookupError:
        raise ForgeError(f"no run {run_id!r}", code=ErrorCode.NOT_FOUND) from None
    except run_reads.Unanswered:
        return await _from_events(ctx, who, run_id)
    shown = run_reads.run_state(status, view, result)  # as `forge status` says it
    error = None
    if view is None and result is None and status != "RUNNING":
        error = await run_reads.failure(ctx.client, run_id)
    return RunDetail(
        run_id=run_id,
        status=shown,
        workflow_status=status,
        view=view,
        result=result,
        error=error,
        trace_id=run_trace_id(run_id),
    )


async def _from_events(ctx: ApiContext, who: Principal, run_id: str) -> RunDetail:
    """The run's status as its log tells it: the workflow did not answer (no worker serves it)."""
    events = await asyncio.to_thread(
        ctx.services.events.list_events, run_id=run_id, tenant_id=who.tenant, limit=1_000_000
    )
    status, steps = logged_state(events)
    return RunDetail(
        run_id=run_id,
        status=status,
        workflow_status="RUNNING",
        source="events",
        steps=steps,
        trace_id=run_trace_id(run_id),
    )


@router.post(
    "/runs/{run_id}/cancel",
    status_code=202,
    response_model=RunDetail,
    responses=problem_responses(401, 403, 404, 409),
    summary="Ask a run to stop in any phase (its front end or the steps in flight are cancelled)",
)
async def cancel_run(
    run_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("runs.cancel"))]
) -> RunDetail:
    await tenant_run(ctx, who, run_id)
    handle = ctx.client.get_workflow_handle(run_id)
    described = await handle.describe()
    if described.status != WorkflowExecutionStatus.RUNNING:
        ended = described.status.name.lower() if described.status else "ended"
        raise ForgeError(
            f"run {run_id} already ended ({ended}); nothing was changed", code=ErrorCode.RUN_ENDED
        )
    await handle.cancel()
    return RunDetail(run_id=run_id, status="cancelling", workflow_status="RUNNING")


@router.get(
    "/runs/{run_id}/events",
    response_model=EventPage,
    responses=problem_responses(401, 403, 404, 422),
    summary="A run's events, in order",
)
async def run_events(
    run_id: str,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("runs.read"))],
    after: Annotated[Position | None, Query(description="next_after of the last page")] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 200,
) -> EventPage:
    await tenant_run(ctx, who, run_id)
    page = await asyncio.to_thread(
        ctx.services.events.page, who.tenant, run_id=run_id, after=after, limit=limit
    )
    return EventPage(
        events=[e for _, e in page], next_after=page[-1][0] if len(page) == limit else None
    )
