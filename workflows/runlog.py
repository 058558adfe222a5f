"""RunLog: the run's identity, its deterministic event ids and its appends to the event log."""

from collections.abc import Mapping
from typing import Any, TypeVar

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from schemas.base import FrozenModel
    from schemas.event_catalogue import RUN_STARTED, payload_of
    from schemas.event_ids import StreamKind, event_id, stream_id
    from schemas.events import Actor, EventDraft
    from schemas.run import AppendEventsInput, RunInput, StreamBatch
    from schemas.scope import RunScoped
    from workflows import operations as ops
    from workflows.causes import cancelled

ForRun = TypeVar("ForRun", bound=RunScoped)
Out = TypeVar("Out", bound=BaseModel)


class RunLog:
    """The run's identity: its activities' inputs, its events (id, scope, timestamp) and appends.

    An event id is `{run_id}:{type}[:{suffix}]` (schemas.event_ids), the suffix defaulting to the
    payload's step_key, so a retried append of the same event is a no-op in the store. A stream
    is one of the run's streams (`run`, `step` and its key, ...).
    """

    def __init__(self, inp: RunInput) -> None:
        self.run_id = inp.run_id
        self.scope = inp.scope
        # While held, appends wait here for the next emit, which writes them first (one call).
        self._held: list[StreamBatch] | None = None

    def hold(self, stream: StreamKind, drafts: list[EventDraft], key: str | None = None) -> None:
        """Hold `drafts` and every append after them back until the next emit.

        A run started with a plan holds run.started and its recipe trail: the next emit
        (run.compiled, or how the run ended) writes them first, in its own events__append,
        so a plan run's front end costs one activity fewer per append.
        """
        self._held = [
            *(self._held or []),
            StreamBatch(stream_id=stream_id(self.run_id, stream, key), events=drafts),
        ]

    async def call(
        self,
        op: "ops.Operation[ForRun, Out]",
        /,
        options: Mapping[str, Any] | None = None,
        **fields: Any,
    ) -> Out:
        """Run `op` for this run: its input is `fields` in the run's id and scope.

        `options` are the operation's call options (timeout, retry, execute_activity's own).
        """
        inp = op.input(run_id=self.run_id, scope=self.scope, **fields)
        return await op(inp, **(options or {}))

    def started_id(self) -> str:
        """The id of run.started.v1: what run-level events cause before the run compiled."""
        return event_id(self.run_id, RUN_STARTED)

    def draft(
        self,
        type_: str,
        caused_by: str | None,
        payload: FrozenModel,
        *,
        actor: Actor | None = None,
        id_suffix: str | None = None,
    ) -> EventDraft:
        """The event, in the run's scope; `actor` (a person deciding a gate) acts instead."""
        step_key = getattr(payload, "step_key", None)
        suffix = id_suffix if id_suffix is not None else (step_key or "")
        return EventDraft(
            event_id=event_id(self.run_id, type_, suffix),
            type=type_,
            scope=self.scope if actor is None else self.scope.acting(actor),
            run_id=self.run_id,
            caused_by=caused_by,
            timestamp=workflow.now(),
            payload=payload_of(type_, payload),
        )

    async def append(
        self, stream: StreamKind, drafts: list[EventDraft], key: str | None = None
    ) -> None:
        """Append `drafts` to the run's `stream` (held back while the log holds)."""
        if self._held is not None:
            self.hold(stream, drafts, key)
            return
        await self._append(stream_id(self.run_id, stream, key), drafts)

    async def release(self) -> None:
        """Write whatever is held, now (a run cancelled before its next emit)."""
        if self._held:
            *earlier, last = self._held
            self._held = earlier
            await self._append_batch(last)

    async def _append(self, stream: str, drafts: list[EventDraft]) -> None:
        await self._append_batch(StreamBatch(stream_id=stream, events=drafts))

    async def _append_batch(self, batch: StreamBatch) -> None:
        earlier, self._held = self._held or [], None
        try:
            await ops.EVENTS_APPEND(
                AppendEventsInput(stream_id=batch.stream_id, events=batch.events, earlier=earlier)
            )
        except BaseException as err:
            if earlier and cancelled(err):  # what was held may be unwritten: for release()
                self._held = [*earlier, batch]
            raise

    async def emit(
        self,
        type_: str,
        stream: StreamKind,
        caused_by: str | None,
        payload: FrozenModel,
        *,
        key: str | None = None,
        actor: Actor | None = None,
        id_suffix: str | None = None,
    ) -> str:
        """Append one event to the run's `stream` (`key`: its step or gate); its deterministic id.

        What the log held is written first, in the same append.
        """
        draft = self.draft(type_, caused_by, payload, actor=actor, id_suffix=id_suffix)
        await self._append(stream_id(self.run_id, stream, key), [draft])
        return draft.event_id
