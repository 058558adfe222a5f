"""Webhooks (issue 19 §1): what a tenant registers, what Forge POSTs, what the log records.

A webhook hears the tenant's events of the types it names, from the moment it was registered
(never history). Each (webhook, event) is one delivery, with one delivery id that a receiver
sees on every retry (`webhook-id`), signed per the Standard Webhooks spec with a secret that
is shown once, at registration, and never stored (workers/services/webhook_keys.py derives it).
"""

import hashlib

from pydantic import AwareDatetime, Field

from schemas.base import FrozenModel, PlainData
from schemas.events import Event
from schemas.scope import Actor, Scope
from schemas.webhook_events import WEBHOOK_EVENTS, WebhookEventType

__all__ = [
    "WEBHOOK_DELIVERED",
    "WEBHOOK_EVENTS",
    "WEBHOOK_FAILED",
    "Webhook",
    "WebhookCreate",
    "WebhookCreated",
    "WebhookDelivered",
    "WebhookDeliveryInput",
    "WebhookDeliveryList",
    "WebhookDeliveryResult",
    "WebhookEventType",
    "WebhookFailed",
    "WebhookList",
    "WebhookMessage",
    "WebhookSendInput",
    "WebhookSendResult",
    "delivery_id",
    "delivery_workflow_id",
]

WEBHOOK_DELIVERED = "webhook.delivered.v1"
WEBHOOK_FAILED = "webhook.failed.v1"


def delivery_id(webhook_id: str, event_id: str) -> str:
    """The one id of the delivery of `event_id` to `webhook_id` (the `webhook-id` header)."""
    digest = hashlib.sha256(f"{webhook_id}\x00{event_id}".encode()).hexdigest()
    return f"msg_{digest[:32]}"


def delivery_workflow_id(webhook_id: str, event_id: str) -> str:
    """The Temporal workflow id of that delivery: a second start of it is refused (dedupe)."""
    return f"webhook-{webhook_id}-{event_id}"


class Webhook(FrozenModel):
    """A registered webhook (its secret is not here: it was shown once, at registration)."""

    webhook_id: str = Field(pattern=r"^wh_[0-9a-f]{16}$")
    tenant_id: str
    url: str
    events: list[WebhookEventType]
    created_at: AwareDatetime
    created_by: Actor
    deleted_at: AwareDatetime | None = None
    from_seq: int | None = Field(
        default=None,
        description="the tenant's event log position when it was registered: it hears the "
        "events the log records after it, never those at or before it, whatever their "
        "timestamps (null: registered before Forge recorded it)",
    )


class WebhookCreate(FrozenModel):
    """Register a webhook: where to POST, and which of the tenant's events."""

    url: str = Field(
        min_length=1,
        max_length=2000,
        description="an http:// or https:// URL; it must resolve to a public address, unless "
        "the operator allowed its IP (FORGE_WEBHOOK_ALLOW_IPS)",
    )
    events: list[WebhookEventType] = Field(
        min_length=1, description="gate.requested.v1, run.completed.v1 and/or run.failed.v1"
    )


class WebhookCreated(FrozenModel):
    """The registered webhook and its signing secret: this answer is the only place it is."""

    webhook: Webhook
    secret: str = Field(description="whsec_<base64>: verify each delivery's webhook-signature")


class WebhookList(FrozenModel):
    webhooks: list[Webhook]


class WebhookMessage(FrozenModel):
    """The JSON body of every delivery."""

    id: str = Field(description="the delivery id, as in the webhook-id header")
    type: WebhookEventType
    timestamp: AwareDatetime = Field(description="when the event happened")
    tenant: str
    run_id: str | None
    data: dict[str, PlainData]


class WebhookDelivered(FrozenModel):
    """Payload of webhook.delivered.v1 (stream `webhooks:<tenant>`), caused by the event sent."""

    webhook_id: str
    delivery_id: str
    event_id: str
    event_type: str
    run_id: str | None = None
    status: int = Field(description="the receiver's 2xx")
    attempts: int = Field(ge=1)


class WebhookFailed(FrozenModel):
    """Payload of webhook.failed.v1: every attempt failed, or one that cannot be retried."""

    webhook_id: str
    delivery_id: str
    event_id: str
    event_type: str
    run_id: str | None = None
    status: int | None = Field(default=None, description="the last answer, if one came")
    attempts: int = Field(ge=1)
    error: str = Field(description="why the last attempt failed (credentials masked)")
    code: str = Field(description="the error code: WEBHOOK_REFUSED, EGRESS_BLOCKED, ...")


class WebhookDeliveryList(FrozenModel):
    """A webhook's delivery records, oldest first."""

    deliveries: list[Event] = Field(description="webhook.delivered.v1 and webhook.failed.v1")


class WebhookSendInput(FrozenModel):
    """webhooks__send: one POST of a delivery (signed at send time, so each attempt anew)."""

    webhook_id: str
    url: str
    delivery_id: str
    body: str = Field(description="the WebhookMessage as JSON: signed and sent byte for byte")


class WebhookSendResult(FrozenModel):
    status: int
    attempts: int = Field(ge=1)


class WebhookDeliveryInput(FrozenModel):
    """WebhookDelivery: one event to one webhook, retried by Temporal, then recorded."""

    scope: Scope
    send: WebhookSendInput
    event_id: str
    event_type: str
    run_id: str | None = None
    max_attempts: int = Field(ge=1)


class WebhookDeliveryResult(FrozenModel):
    delivered: bool
    status: int | None = None
    attempts: int = Field(ge=1)
