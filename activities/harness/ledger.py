"""The step's stream as a ledger: the events an attempt writes, the usage recorded there."""

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import suppress

from activities.harness.attempt import StepAttempt, step_stream
from activities.harness.failure import StepFailure
from activities.store.events import EventStore
from activities.store.records import PublishedArtifact
from compiler.budget import LedgerError, step_budget_refusal, usage_from_events
from schemas.artifacts import ArtifactRef, Provenance
from schemas.budget import Usage
from schemas.error_codes import ErrorCode
from schemas.events import Event, EventDraft
from schemas.run import StepExecuteInput, StepUsageInput

# An attempt's start is written alone only when its end has not come within this long (or it
# shares its stream first); a short attempt's start goes in the same transaction as its end.
# Temporal records an activity's start the same way: ActivityTaskStarted is written with its
# completion unless the activity is retried or runs on.
START_WRITE_DELAY_S = 1.0
# Writes an attempt need not wait for: its start, while its executor runs.
_WRITER = ThreadPoolExecutor(max_workers=16, thread_name_prefix="forge-attempt-events")


class _LaterWrite:
    """`batch` written on a writer thread after `delay_s`, unless called off before it starts."""

    def __init__(
        self, batch: list[EventDraft], write: Callable[[], list[Event]], delay_s: float
    ) -> None:
        self.batch = batch
        self._write = write
        self._delay_s = delay_s
        self._called_off = threading.Event()
        self._lock = threading.Lock()
        self._started = False
        self.future: Future[list[Event] | None] = _WRITER.submit(self._run)

    def _run(self) -> list[Event] | None:
        if self._called_off.wait(self._delay_s):
            return None
        with self._lock:
            if self._called_off.is_set():
                return None
            self._started = True
        return self._write()

    def call_off(self) -> bool:
        """Whether the write was called off in time (it never starts); False once it has."""
        with self._lock:
            if self._started:
                return False
            self._called_off.set()
            return True


class AttemptLog:
    """An attempt's own events, buffered and appended in as few transactions as it can.

    An attempt's start (its started event and preflight receipt) is written with its end, in
    one transaction, unless the attempt runs longer than START_WRITE_DELAY_S (then a writer
    thread writes it meanwhile) or another writer shares the step's stream first (then it is
    written before that writer's first event). Whatever appends to the step's stream next
    settles a write in flight first, so the stream's order never changes; an attempt that
    ends in any other way writes its start as it leaves (`close`).
    """

    def __init__(self, events: EventStore, attempt: StepAttempt) -> None:
        self._events = events
        self._stream_id = attempt.stream_id
        self._tenant_id = attempt.inp.scope.tenant
        self._pending: list[EventDraft] = []
        self._writing: _LaterWrite | None = None
        self._written: list[Event] = []  # this attempt's own events, as stored
        self._shared = False  # whether another writer (the bridge, a model call) used the stream

    def buffer(self, draft: EventDraft) -> None:
        self._pending.append(draft)

    def flush(self, *drafts: EventDraft) -> None:
        """The buffered events (a start not yet written first) and these, in one transaction."""
        self.settle()
        self._written += self._events.append([*self._pending, *drafts], stream_id=self._stream_id)
        self._pending.clear()

    def flush_later(self, *drafts: EventDraft, delay_s: float = START_WRITE_DELAY_S) -> None:
        """As `flush`, on a writer thread after `delay_s`, unless the next write carries them."""
        self.settle()
        batch = [*self._pending, *drafts]
        self._pending.clear()
        self._writing = _LaterWrite(
            batch, lambda: self._events.append(batch, stream_id=self._stream_id), delay_s
        )

    def settle(self) -> None:
        """Call off or wait for a `flush_later` write.

        A batch not written (called off in time, or failed) goes back to the front of the
        buffer, so the next write (`flush`, `flush_published`, `share`) carries it, still ahead
        of everything after it.
        """
        writing, self._writing = self._writing, None
        if writing is None:
            return
        try:
            written = None if writing.call_off() else writing.future.result()
        except Exception:
            written = None
        if written is None:
            self._pending[:0] = writing.batch
        else:
            self._written += written

    def close(self) -> None:
        """The attempt leaves: what it buffered is written (its start, at least, is on record).

        Reached after `flush`/`flush_published` wrote everything, or when the attempt ends
        with another error (a cancellation): that error stands even if this write fails.
        """
        self.settle()
        if self._pending:
            with suppress(Exception):
                self.flush()

    def share(self) -> None:
        """Another writer (the bridge, a model call) uses the step's stream from now on.

        This attempt's own events are written first (raising if they cannot be), so the
        stream keeps its order.
        """
        self._shared = True
        self.settle()
        if self._pending:
            self.flush()

    def stream(self) -> list[Event]:
        """The step's stream as it stands, once the executor has exited: its usage ledger.

        A start still buffered is not in it (it carries no usage and no evaluation). When the
        attempt's own start opened the stream (seq 1: no earlier attempt or pass), is written,
        and no other writer shared the stream, the stream is exactly what this attempt wrote,
        and is not read back.
        """
        self.settle()
        if self._pending or self._shared or not self._written or self._written[0].seq != 1:
            return self._events.read_stream(self._stream_id, tenant_id=self._tenant_id)
        return list(self._written)

    def flush_published(
        self,
        publications: Sequence[tuple[ArtifactRef, Provenance]],
        events_for: Callable[[list[PublishedArtifact]], list[EventDraft]],
    ) -> None:
        """Publish the outputs and append the buffered events and `events_for(...)`, atomically."""
        self.settle()
        pending = list(self._pending)
        self._events.publish_and_append(
            publications,
            lambda published: [*pending, *events_for(published)],
            stream_id=self._stream_id,
            tenant_id=self._tenant_id,
        )
        self._pending.clear()


def recorded_usages(
    events: EventStore, inp: StepExecuteInput | StepUsageInput, *attempts: int | None
) -> list[Usage]:
    """The step's recorded usage for each of `attempts` (None: every attempt), read once.

    The step's stream is its usage ledger.
    """
    # step__usage's input names no scope: its run's tenant is looked up by the run id.
    tenant = (
        inp.scope.tenant if isinstance(inp, StepExecuteInput) else events.run_tenant(inp.run_id)
    )
    stream = step_stream(inp.run_id, inp.step_key)
    return ledger_usages(events.read_stream(stream, tenant_id=tenant), inp, *attempts)


def ledger_usages(
    ledger: Sequence[Event], inp: StepExecuteInput | StepUsageInput, *attempts: int | None
) -> list[Usage]:
    """The usage for each of `attempts` in the step's stream `ledger`, already read.

    A malformed usage event is a platform fault no retry can mend: the step fails for good.
    """
    try:
        return [usage_from_events(ledger, attempt=a) for a in attempts]
    except LedgerError as exc:
        raise StepFailure(ErrorCode.LEDGER_CORRUPT, f"step {inp.step_key}: {exc}") from None


def recorded_usage(
    events: EventStore, inp: StepExecuteInput | StepUsageInput, *, attempt: int | None = None
) -> Usage:
    """The step's recorded usage, over every attempt or one."""
    [usage] = recorded_usages(events, inp, attempt)
    return usage


def budget_refusal(events: EventStore, attempt: StepAttempt) -> Callable[[], str | None]:
    """Why the run's budget refuses the attempt more spending (checked before each call)."""
    return lambda: step_budget_refusal(
        attempt.inp.budget_left, recorded_usage(events, attempt.inp, attempt=attempt.number)
    )
