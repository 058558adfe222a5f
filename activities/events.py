"""Event-log activities: the workflow's only way to write to the append-only log."""

from temporalio import activity

from activities import telemetry_metrics
from activities.store.events import EventStore
from schemas import names
from schemas.event_catalogue import GATE_DECIDED, GATE_REQUESTED
from schemas.events import EventDraft
from schemas.run import AppendEventsInput, AppendEventsResult


class EventActivities:
    def __init__(self, events: EventStore) -> None:
        self._events = events

    @activity.defn(name=names.EVENTS_APPEND)
    def append(self, inp: AppendEventsInput) -> AppendEventsResult:
        """Append run-level events; idempotent by event_id, so a retry never duplicates.

        Batches the workflow held back go first, in the same transaction.
        """
        batches = [*((b.stream_id, b.events) for b in inp.earlier), (inp.stream_id, inp.events)]
        stored = self._events.append_batches(batches)
        for draft in inp.events if telemetry_metrics.enabled() else ():
            if draft.type == GATE_DECIDED:
                self._gate_waited(inp.stream_id, draft)
        return AppendEventsResult(event_ids=[e.event_id for e in stored])

    def _gate_waited(self, stream_id: str, decided: EventDraft) -> None:
        # The workflow must not record metrics: its decision's wait is measured here, between
        # the two events' workflow timestamps.
        gate_id = decided.payload.get("gate_id")
        for event in self._events.read_stream(stream_id, tenant_id=decided.scope.tenant):
            if event.type == GATE_REQUESTED and event.payload.get("gate_id") == gate_id:
                waited = (decided.timestamp - event.timestamp).total_seconds()
                outcome = str(decided.payload.get("decision", "decided"))
                telemetry_metrics.gate_decided(decided.scope.tenant, outcome, waited)
                return
