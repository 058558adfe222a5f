"""WebhookDelivery: one event POSTed to one webhook, retried by Temporal, then recorded.

The dispatcher (workers/process/webhook_dispatch.py) starts it under a workflow id made from the
webhook and the event, so however many pollers see the event, it is delivered once. The POST
is webhooks__send under webhook_retry; what came of it is one event in the tenant's
`webhooks:<tenant>` stream, caused by the event delivered: webhook.delivered.v1 with the
attempts it took, or webhook.failed.v1 with the last error (masked by the store on append).
"""

from temporalio import workflow
from temporalio.exceptions import ActivityError

from compiler.ladder.secrets.mask import clip

with workflow.unsafe.imports_passed_through():
    from schemas.event_catalogue import payload_of
    from schemas.event_ids import event_id, webhook_stream
    from schemas.events import EventDraft
    from schemas.names import WEBHOOK_WORKFLOW
    from schemas.run import AppendEventsInput
    from schemas.webhooks import (
        WEBHOOK_DELIVERED,
        WEBHOOK_FAILED,
        WebhookDelivered,
        WebhookDeliveryInput,
        WebhookDeliveryResult,
        WebhookFailed,
    )
    from workflows import operations as ops
    from workflows import policies
    from workflows.causes import app_error, attempts, cause_message, cause_type


@workflow.defn(name=WEBHOOK_WORKFLOW)
class WebhookDeliveryWorkflow:
    """Deliver one event to one webhook; record the outcome either way."""

    @workflow.run
    async def run(self, inp: WebhookDeliveryInput) -> WebhookDeliveryResult:
        send = inp.send
        common = {
            "webhook_id": send.webhook_id,
            "delivery_id": send.delivery_id,
            "event_id": inp.event_id,
            "event_type": inp.event_type,
            "run_id": inp.run_id,
        }
        try:
            sent = await ops.WEBHOOK_SEND(send, retry=policies.webhook_retry(inp.max_attempts))
        except ActivityError as err:
            cause = app_error(err)
            told = cause.details[0] if cause is not None and cause.details else {}
            status = told.get("status") if isinstance(told, dict) else None
            failed = WebhookFailed(
                **common,
                status=status if isinstance(status, int) else None,
                attempts=attempts(err),
                error=clip(cause_message(err), 1000)[0],
                code=cause_type(err) or "ERROR",
            )
            await self._record(inp, WEBHOOK_FAILED, failed)
            return WebhookDeliveryResult(
                delivered=False, status=failed.status, attempts=failed.attempts
            )
        delivered = WebhookDelivered(**common, status=sent.status, attempts=sent.attempts)
        await self._record(inp, WEBHOOK_DELIVERED, delivered)
        return WebhookDeliveryResult(delivered=True, status=sent.status, attempts=sent.attempts)

    async def _record(
        self, inp: WebhookDeliveryInput, type_: str, payload: WebhookDelivered | WebhookFailed
    ) -> None:
        draft = EventDraft(
            event_id=event_id(inp.send.delivery_id, type_),
            type=type_,
            scope=inp.scope,
            caused_by=inp.event_id,  # the run is named in the payload: its own log stays closed
            timestamp=workflow.now(),
            payload=payload_of(type_, payload),
        )
        stream = webhook_stream(inp.scope.tenant)
        await ops.EVENTS_APPEND(AppendEventsInput(stream_id=stream, events=[draft]))
