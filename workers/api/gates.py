"""`/v1/gates`: the tenant's approval inbox, and a decision on the contract that was reviewed.

A gate is named `<run_id>:<gate_id>`. A decision must carry the gate's contract hash: a wrong
or stale one is 409 and changes nothing, as is a decision on a gate that is already closed
(the answer says how it closed). A key decides as its actor, in the gate's approver role, if
it was given that role (`forge keys create --gate-role ROLE`).
"""

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from schemas.api import DecisionRequest, GateItem, GateList
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.run import GateDecision
from workers.api.auth import Ctx, requires
from workers.api.idempotency import IdempotencyKey, once
from workers.api.problems import problem_responses
from workers.api.runs import tenant_run
from workers.services import gates
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["gates"])


@router.get(
    "/gates",
    response_model=GateList,
    responses=problem_responses(401, 403, 422),
    summary="Open gates of the tenant's runs, oldest first, with their evidence",
)
async def inbox(
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("gates.read"))],
    run_id: Annotated[str | None, Query(description="only this run's gates")] = None,
) -> GateList:
    events = await asyncio.to_thread(
        ctx.services.events.list_events, tenant_id=who.tenant, run_id=run_id, limit=1_000_000
    )
    return GateList(
        gates=[
            GateItem(
                gate=f"{g.run_id}:{g.gate_id}",
                run_id=g.run_id,
                gate_id=g.gate_id,
                approver_role=g.role,
                contract_hash=g.contract_hash,
                requested_at=g.requested_at,
                prompt=str(g.spec.get("prompt", "")),
                gated_steps=list(g.spec.get("gated_step_keys", [])),
                evidence=list(g.spec.get("evidence", [])),
                reminders=g.reminders,
            )
            for g in gates.pending_gates(events)
        ]
    )


@router.post(
    "/gates/{gate}/decision",
    response_model=GateDecision,
    responses=problem_responses(401, 403, 404, 409, 422, 503),
    summary="Approve, reject or request changes on an open gate",
    description="503 WORKER_UNAVAILABLE (with Retry-After): no worker took the decision in "
    "time; nothing was decided and the run will not take it later, so send it again.",
)
async def decide(
    gate: str,
    body: DecisionRequest,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("gates.decide"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    run_id, sep, gate_id = gate.rpartition(":")
    if not sep or not run_id or not gate_id:
        raise ForgeError(
            f"no gate {gate!r}: a gate is named <run_id>:<gate_id>",
            code=ErrorCode.NOT_FOUND,
            hint="take the `gate` field of GET /v1/gates",
        )

    async def act() -> tuple[int, GateDecision]:
        await tenant_run(ctx, who, run_id)
        run_events = await asyncio.to_thread(
            ctx.services.events.list_events, run_id=run_id, tenant_id=who.tenant, limit=1_000_000
        )
        decided = await gates.decide(
            ctx.client,
            who,
            run_events,
            run_id,
            gate_id,
            body.decision,
            body.comment,
            body.contract_hash,
        )
        return 200, decided

    return await once(ctx, who, request, idempotency_key, body, act)
