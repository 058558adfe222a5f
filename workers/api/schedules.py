"""`/v1/schedules`: every `forge schedule` verb for other services (workers/services/schedules.py).

A schedule's input templates name S3 objects only (`s3://bucket/{scheduled:%Y-%m-%d}/x.csv`):
the API reads no paths on the server.
"""

from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.responses import JSONResponse

from schemas.api_capsules import (
    BackfillRequest,
    ScheduleBody,
    ScheduleCreate,
    ScheduleList,
    ScheduleSummary,
)
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.schedules import ScheduleView
from workers.api.auth import Ctx, requires
from workers.api.context import ApiContext
from workers.api.idempotency import IdempotencyKey, once
from workers.api.inputs import param_strings
from workers.api.problems import problem_responses
from workers.services import schedules
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["schedules"])


def _request(name: str, body: ScheduleBody) -> schedules.ScheduleRequest:
    for key, template in body.inputs.items():
        if not template.startswith("s3://"):
            raise ForgeError(
                f"inputs.{key}: a schedule's input over the API is an s3:// template; the API "
                "reads no paths on the server",
                code=ErrorCode.REQUEST_INVALID,
            )
    return schedules.ScheduleRequest(
        name=name,
        capsule=body.capsule,
        cron=body.cron,
        every=body.every,
        tz=body.tz,
        overlap=body.overlap,
        catchup_window=body.catchup_window,
        pause_on_failure=body.pause_on_failure,
        note=body.note,
        inputs=dict(body.inputs),
        params=param_strings(body.params),
    )


async def _view(ctx: ApiContext, who: Principal, name: str) -> ScheduleView:
    s = ctx.services
    return await schedules.describe(ctx.client, s.capsules, s.claims, who.scope(), name)


@router.get("/schedules", response_model=ScheduleList, responses=problem_responses(401, 403))
async def list_schedules(
    ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.read"))]
) -> ScheduleList:
    """The tenant's schedules."""
    found = await schedules.listed(ctx.client, who.scope())
    return ScheduleList(schedules=[ScheduleSummary(**vars(s)) for s in found])


@router.post(
    "/schedules",
    status_code=201,
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404, 409, 422),
    summary="Create a schedule: a capsule on a calendar (cron) or an interval (every)",
)
async def create_schedule(
    body: ScheduleCreate,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("schedules.write"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    async def act() -> tuple[int, ScheduleView]:
        req = _request(body.name, body)
        await schedules.create(
            ctx.client, ctx.settings.task_queue, ctx.services.capsules, who.scope(), req
        )
        return 201, await _view(ctx, who, body.name)

    return await once(ctx, who, request, idempotency_key, body, act)


@router.put(
    "/schedules/{name}",
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404, 422),
    summary="Replace a schedule's capsule, calendar, policies and inputs",
)
async def update_schedule(
    name: str,
    body: ScheduleBody,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("schedules.write"))],
) -> ScheduleView:
    req = _request(name, body)
    await schedules.update(
        ctx.client, ctx.settings.task_queue, ctx.services.capsules, who.scope(), req
    )
    return await _view(ctx, who, name)


@router.get(
    "/schedules/{name}",
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404),
)
async def describe_schedule(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.read"))]
) -> ScheduleView:
    """Next fire times, recent runs and their outcomes, skipped and refused counts."""
    return await _view(ctx, who, name)


async def _act(ctx: ApiContext, who: Principal, name: str, what: str) -> None:
    await schedules.act(ctx.client, ctx.services.claims, who.scope(), name, what)


@router.post(
    "/schedules/{name}/pause",
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404),
)
async def pause_schedule(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.write"))]
) -> ScheduleView:
    """Pause: nothing fires until it is unpaused."""
    await _act(ctx, who, name, "pause")
    return await _view(ctx, who, name)


@router.post(
    "/schedules/{name}/unpause",
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404),
)
async def unpause_schedule(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.write"))]
) -> ScheduleView:
    """Unpause."""
    await _act(ctx, who, name, "unpause")
    return await _view(ctx, who, name)


@router.post(
    "/schedules/{name}/trigger",
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404),
)
async def trigger_schedule(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.write"))]
) -> ScheduleView:
    """Run once now (the time now is its scheduled time)."""
    await _act(ctx, who, name, "trigger")
    return await _view(ctx, who, name)


@router.post(
    "/schedules/{name}/backfill",
    status_code=202,
    response_model=ScheduleView,
    responses=problem_responses(401, 403, 404, 422),
)
async def backfill_schedule(
    name: str,
    body: BackfillRequest,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("schedules.write"))],
) -> ScheduleView:
    """Start every scheduled time in [start, end].

    A time that already ran runs no more, unless `force`.
    """
    await schedules.backfill(
        ctx.client, ctx.services.claims, who.scope(), name, body.start, body.end, body.overlap,
        force=body.force,
    )  # fmt: skip
    return await _view(ctx, who, name)


@router.delete("/schedules/{name}", status_code=204, responses=problem_responses(401, 403, 404))
async def delete_schedule(
    name: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("schedules.write"))]
) -> None:
    """Delete (the runs it made stay)."""
    await _act(ctx, who, name, "delete")
