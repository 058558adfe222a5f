"""GET /v1/quota: the caller's tenant's quotas and what it uses of them (issue 20 §3)."""

import asyncio
from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends

from schemas.quota import QuotaUsage
from workers.api.auth import Ctx, requires
from workers.api.problems import problem_responses
from workers.services import quotas
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["quota"])


@router.get(
    "/quota",
    response_model=QuotaUsage,
    responses=problem_responses(401, 403),
    summary="The tenant's quotas: runs at once, tokens per day, what is used and when it resets",
)
async def get_quota(
    ctx: Ctx, who: Annotated[Principal, Depends(requires("runs.read"))]
) -> QuotaUsage:
    store = ctx.services.admissions
    await quotas.reconcile(ctx.client, store, who.tenant)
    return await asyncio.to_thread(store.usage, who.tenant, datetime.now(UTC))
