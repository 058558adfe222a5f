"""`/v1/keys`: a tenant's administrators manage its keys (the token is shown once)."""

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends

from schemas.access import ApiKey, IssuedKey
from schemas.api import KeyCreate, KeyList
from schemas.scope import Actor
from workers.api.auth import Ctx, requires
from workers.api.problems import problem_responses
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["keys"])


@router.get(
    "/keys",
    response_model=KeyList,
    responses=problem_responses(401, 403),
    summary="The tenant's keys (never their tokens)",
)
async def list_keys(ctx: Ctx, who: Annotated[Principal, Depends(requires("keys.read"))]) -> KeyList:
    return KeyList(keys=await asyncio.to_thread(ctx.access.keys, who.tenant))


@router.post(
    "/keys",
    status_code=201,
    response_model=IssuedKey,
    responses=problem_responses(401, 403, 422),
    summary="Create a key of the tenant; its token is in this answer only",
)
async def create_key(
    body: KeyCreate, ctx: Ctx, who: Annotated[Principal, Depends(requires("keys.write"))]
) -> IssuedKey:
    actor = Actor(id=body.name, name=body.name, role=body.role, kind="system")
    return await asyncio.to_thread(
        ctx.access.create_key,
        who.tenant,
        body.role,
        actor,
        gate_roles=body.gate_roles,
        expires_at=body.expires_at,
    )


@router.post(
    "/keys/{key_id}/revoke",
    response_model=ApiKey,
    responses=problem_responses(401, 403, 404),
    summary="Revoke a key of the tenant (at once, for every request after this one)",
)
async def revoke_key(
    key_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("keys.write"))]
) -> ApiKey:
    return await asyncio.to_thread(ctx.access.revoke, who.tenant, key_id)
