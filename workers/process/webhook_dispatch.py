"""The webhook dispatcher: every second, each live webhook's new events become deliveries.

For each live webhook it reads the tenant's events of the webhook's types after the webhook's
cursor, starts one WebhookDelivery workflow per event under an id made from the webhook and
the event (a second start of it, by another worker or a slower poll, is refused: that is the
dedupe), then moves the cursor past them. Temporal then owns the POST and its retries.

A gate-opened message carries everything a receiver needs to decide the gate in one call:
`POST {decision_path}` with the contract hash given, by a key holding the approver role.
"""

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from temporalio.client import Client
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from activities.store.events import EventStore
from activities.store.webhooks import WebhookStore
from schemas.event_catalogue import GATE_REQUESTED
from schemas.events import Event
from schemas.scope import Scope
from schemas.webhooks import (
    Webhook,
    WebhookDeliveryInput,
    WebhookMessage,
    WebhookSendInput,
    delivery_id,
    delivery_workflow_id,
)
from workers.process.periodic import repeating
from workers.settings import Settings
from workflows.policies import tenant_attributes, tenant_priority
from workflows.webhooks import WebhookDeliveryWorkflow

__all__ = ["DISPATCH_EVERY_S", "dispatch_once", "dispatching", "message"]

DISPATCH_EVERY_S = 1.0
_PAGE = 200  # events read per webhook per pass; the rest wait for the next pass
log = logging.getLogger(__name__)


def message(webhook: Webhook, event: Event) -> WebhookMessage:
    """The body a webhook receives for `event` (never the webhook's secret)."""
    return WebhookMessage(
        id=delivery_id(webhook.webhook_id, event.event_id),
        type=event.type,  # read with the webhook's types only
        timestamp=event.timestamp,
        tenant=event.scope.tenant,
        run_id=event.run_id,
        data=_data(event),
    )


def _data(event: Event) -> dict[str, Any]:
    if event.type != GATE_REQUESTED:
        return dict(event.payload)
    spec = event.payload["gate"]
    gate = f"{event.run_id}:{event.payload['gate_id']}"
    return {
        "gate": gate,
        "gate_id": event.payload["gate_id"],
        "approver_role": spec["approver_role"],
        "contract_hash": spec["contract_hash"],
        "prompt": spec.get("prompt", ""),
        "gated_steps": spec.get("gated_step_keys", []),
        "evidence": spec.get("evidence", []),
        "deadline_s": spec.get("deadline_s"),
        "decision_path": f"/v1/gates/{gate}/decision",
        "decisions": ["approve", "reject", "request_changes"],
    }


async def dispatch_once(
    client: Client, settings: Settings, webhooks: WebhookStore, events: EventStore
) -> int:
    """One pass over every live webhook; how many deliveries it started (refused ones too)."""
    started = 0
    for webhook, cursor in await asyncio.to_thread(webhooks.live):
        page = await asyncio.to_thread(
            events.page, webhook.tenant_id, types=webhook.events, after=cursor, limit=_PAGE
        )
        for _, event in page:
            await _start(client, settings, webhook, event)
            started += 1
        if page:
            await asyncio.to_thread(
                webhooks.advance, webhook.tenant_id, webhook.webhook_id, page[-1][0]
            )
    return started


async def _start(client: Client, settings: Settings, webhook: Webhook, event: Event) -> None:
    body = message(webhook, event)
    inp = WebhookDeliveryInput(
        scope=Scope(tenant=event.scope.tenant, project=event.scope.project),
        send=WebhookSendInput(
            webhook_id=webhook.webhook_id,
            url=webhook.url,
            delivery_id=body.id,
            body=body.model_dump_json(),
        ),
        event_id=event.event_id,
        event_type=event.type,
        run_id=event.run_id,
        max_attempts=settings.webhook_max_attempts,
    )
    with contextlib.suppress(WorkflowAlreadyStartedError):  # delivered or being delivered
        await client.start_workflow(
            WebhookDeliveryWorkflow.run,
            inp,
            id=delivery_workflow_id(webhook.webhook_id, event.event_id),
            task_queue=settings.task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            search_attributes=tenant_attributes(webhook.tenant_id),
            priority=tenant_priority(webhook.tenant_id),
        )


@contextlib.asynccontextmanager
async def dispatching(
    client: Client,
    settings: Settings,
    webhooks: WebhookStore,
    events: EventStore,
    every: float = DISPATCH_EVERY_S,
) -> AsyncIterator[None]:
    """Dispatch every `every` seconds inside the block."""

    async def tick() -> None:
        try:
            await dispatch_once(client, settings, webhooks, events)
        except Exception as exc:  # noqa: BLE001 - the next pass resumes from the cursors
            log.warning("webhook dispatch failed (retried in %.0f s): %s", every, exc)

    async with repeating("forge-webhook-dispatch", every, tick):
        yield
