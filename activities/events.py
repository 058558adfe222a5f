"""Event-log activities: the workflow's only way to write to the append-only log."""

from temporalio import activity

from activities.store.events import EventStore
from schemas import names
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
        return AppendEventsResult(event_ids=[e.event_id for e in stored])
