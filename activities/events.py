"""Event-log activities: the workflow's only way to write to the append-only log."""

from temporalio import activity

from activities.store.events import EventStore
from schemas.run import AppendEventsInput, AppendEventsResult


class EventActivities:
    def __init__(self, events: EventStore) -> None:
        self._events = events

    @activity.defn(name="events__append")
    def append(self, inp: AppendEventsInput) -> AppendEventsResult:
        """Append run-level events; idempotent by event_id, so a retry never duplicates."""
        stored = self._events.append(inp.events, stream_id=inp.stream_id)
        return AppendEventsResult(event_ids=[e.event_id for e in stored])
