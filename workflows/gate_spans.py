"""Gate waits on the run's trace: a span event when a gate opens and when it is decided.

Recorded from the workflow at the moment it happens, never while the workflow replays history
(a replay, a worker taking over the run, a query's replay): each event is recorded once, by the
worker that first executes that point. The span is a zero-length `forge.gate` span in the
current trace context (the run's, when the tracing plugin is installed); with no tracer provider
it is the API's no-op one. A gate's wait can last days, so no span is held open across it: the
decided event carries the wait time instead.
"""

from datetime import datetime

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from opentelemetry.util.types import AttributeValue

    from activities.telemetry import RUN_ID, TENANT, tracer
    from activities.telemetry_spans import safe_text

__all__ = ["GATE_DECIDED_EVENT", "GATE_OPENED_EVENT", "GATE_SPAN", "gate_decided", "gate_opened"]

GATE_SPAN = "forge.gate"
GATE_OPENED_EVENT = "gate.opened"
GATE_DECIDED_EVENT = "gate.decided"
GATE_ID = "forge.gate.id"
GATE_ROLE = "forge.gate.approver_role"
GATE_DECISION = "forge.gate.decision"
GATE_DECIDED_BY = "forge.gate.decided_by"
GATE_WAIT_S = "forge.gate.wait_s"


def gate_opened(run_id: str, tenant: str, gate_id: str, approver_role: str) -> None:
    """Record that `gate_id` opened (its request event was just emitted)."""
    _record(run_id, tenant, gate_id, GATE_OPENED_EVENT, {GATE_ROLE: safe_text(approver_role)})


def gate_decided(
    run_id: str,
    tenant: str,
    gate_id: str,
    decision: str,
    decided_by: str,
    requested_at: datetime | None,
) -> None:
    """Record the decision of `gate_id`, who kind of actor made it, and how long it waited."""
    attrs: dict[str, AttributeValue] = {
        GATE_DECISION: decision,
        GATE_DECIDED_BY: safe_text(decided_by),
    }
    if requested_at is not None:
        attrs[GATE_WAIT_S] = max(0.0, (workflow.now() - requested_at).total_seconds())
    _record(run_id, tenant, gate_id, GATE_DECIDED_EVENT, attrs)


def _record(
    run_id: str, tenant: str, gate_id: str, event: str, attrs: dict[str, AttributeValue]
) -> None:
    ids: dict[str, AttributeValue] = {
        RUN_ID: safe_text(run_id),
        TENANT: safe_text(tenant),
        GATE_ID: safe_text(gate_id),
    }
    # Started on replay too, as the contrib's replay-safe tracer expects: its span ids come from
    # the workflow's own random, which must be drawn from the same way in every execution.
    span = tracer().start_span(GATE_SPAN, attributes=ids)
    if workflow.unsafe.is_replaying_history_events():
        return  # never ended, so never exported: recorded when this point first ran
    span.add_event(event, {**ids, **attrs})
    span.end()
