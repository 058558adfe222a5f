"""`/v1/webhooks`: a tenant's administrators register receivers of its gates and run outcomes.

The signing secret is in the registration's answer only (a replay of that request under its
Idempotency-Key repeats the answer, secret included); lists and reads never show it, and the
database never holds it: it is derived from the server's key (workers/services/webhook_keys.py).
Another tenant's webhook answers 404, as one that does not exist.
"""

import asyncio
from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import JSONResponse

from activities.webhooks.signing import webhook_secret
from schemas.event_ids import webhook_stream
from schemas.webhooks import (
    WEBHOOK_DELIVERED,
    WEBHOOK_FAILED,
    Webhook,
    WebhookCreate,
    WebhookCreated,
    WebhookDeliveryList,
    WebhookList,
)
from workers.api.auth import Ctx, requires
from workers.api.idempotency import IdempotencyKey, once
from workers.api.problems import problem_responses
from workers.services.access import Principal

__all__ = ["router"]

router = APIRouter(prefix="/v1", tags=["webhooks"])
_REPLAYED = "Idempotent-Replayed"


@router.post(
    "/webhooks",
    status_code=201,
    response_model=WebhookCreated,
    responses=problem_responses(401, 403, 409, 422),
    summary="Register a webhook; its signing secret is in this answer only",
)
async def create_webhook(
    body: WebhookCreate,
    request: Request,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("webhooks.write"))],
    idempotency_key: IdempotencyKey = None,
) -> JSONResponse:
    async def act() -> tuple[int, Webhook]:
        created = await asyncio.to_thread(
            ctx.services.webhooks.create, who.tenant, body.url, body.events, who.actor
        )
        return 201, created

    # What the idempotency store keeps is the webhook without its secret, which is derived
    # again for the answer (a replay included): the database never holds it.
    answer = await once(ctx, who, request, idempotency_key, body, act)
    webhook = Webhook.model_validate_json(bytes(answer.body))
    created = WebhookCreated(
        webhook=webhook, secret=webhook_secret(ctx.signing_key, webhook.webhook_id)
    )
    headers = {_REPLAYED: answer.headers[_REPLAYED]} if _REPLAYED in answer.headers else None
    return JSONResponse(
        created.model_dump(mode="json"), status_code=answer.status_code, headers=headers
    )


@router.get(
    "/webhooks",
    response_model=WebhookList,
    responses=problem_responses(401, 403),
    summary="The tenant's webhooks, newest first (never their secrets)",
)
async def list_webhooks(
    ctx: Ctx, who: Annotated[Principal, Depends(requires("webhooks.read"))]
) -> WebhookList:
    return WebhookList(webhooks=await asyncio.to_thread(ctx.services.webhooks.webhooks, who.tenant))


@router.get(
    "/webhooks/{webhook_id}",
    response_model=Webhook,
    responses=problem_responses(401, 403, 404),
    summary="One webhook of the tenant (a removed one shows when it was removed)",
)
async def get_webhook(
    webhook_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("webhooks.read"))]
) -> Webhook:
    return await asyncio.to_thread(ctx.services.webhooks.get, who.tenant, webhook_id)


@router.delete(
    "/webhooks/{webhook_id}",
    response_model=Webhook,
    responses=problem_responses(401, 403, 404),
    summary="Remove a webhook: it hears nothing more (deliveries under way still finish)",
)
async def delete_webhook(
    webhook_id: str, ctx: Ctx, who: Annotated[Principal, Depends(requires("webhooks.write"))]
) -> Webhook:
    return await asyncio.to_thread(ctx.services.webhooks.delete, who.tenant, webhook_id)


@router.get(
    "/webhooks/{webhook_id}/deliveries",
    response_model=WebhookDeliveryList,
    responses=problem_responses(401, 403, 404, 422),
    summary="What became of the webhook's deliveries, oldest first",
)
async def webhook_deliveries(
    webhook_id: str,
    ctx: Ctx,
    who: Annotated[Principal, Depends(requires("webhooks.read"))],
    limit: Annotated[int, Query(ge=1, le=1000, description="the newest this many")] = 100,
) -> WebhookDeliveryList:
    await asyncio.to_thread(ctx.services.webhooks.get, who.tenant, webhook_id)
    records = await asyncio.to_thread(
        ctx.services.events.read_stream, webhook_stream(who.tenant), tenant_id=who.tenant
    )
    mine = [
        e
        for e in records
        if e.type in (WEBHOOK_DELIVERED, WEBHOOK_FAILED)
        and e.payload.get("webhook_id") == webhook_id
    ]
    return WebhookDeliveryList(deliveries=mine[-limit:])
