"""The step's stream as a ledger: the events an attempt writes, the usage recorded there."""

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor

from activities.sandbox.harness import StepFailure
from activities.steps.attempt import StepAttempt, step_stream
from activities.store.events import EventStore
from activities.store.records import PublishedArtifact
from compiler.budget import LedgerError, step_budget_refusal, usage_from_events
from schemas.artifacts import ArtifactRef, Provenance
from schemas.budget import Usage
from schemas.events import Event, EventDraft
from schemas.run import StepExecuteInput, StepUsageInput

# Appends an attempt need not wait for (its start, written while its sandbox starts).
_WRITER = ThreadPoolExecutor(max_workers=4, thread_name_prefix="forge-attempt-events")


class AttemptLog:
    """An attempt's own events, buffered and appended in as few transactions as it can.

    An attempt appends twice: after its preflight receipt, and at the end (with its completion
    or its failure). The first append may go out beside the executor (`flush_soon`): whatever
    appends to the step's stream next settles it first, so the stream's order never changes.
    """

    def __init__(self, events: EventStore, attempt: StepAttempt) -> None:
        self._events = events
        self._stream_id = attempt.stream_id
        self._pending: list[EventDraft] = []
        self._writing: Future[list[Event]] | None = None
        self._written: list[Event] = []  # this attempt's own events, as stored
        self._shared = False  # whether another writer (the bridge, a model call) used the stream
        self._in_flight: list[EventDraft] = []  # the batch `flush_soon` is writing

    def buffer(self, draft: EventDraft) -> None:
        self._pending.append(draft)

    def flush(self, *drafts: EventDraft) -> None:
        """The buffered events (a failed `flush_soon` batch first) and these, in one transaction."""
        self.settle()
        self._written += self._events.append([*self._pending, *drafts], stream_id=self._stream_id)
        self._pending.clear()

    def flush_soon(self, *drafts: EventDraft) -> None:
        """As `flush`, on a writer thread; whatever uses the stream next settles it first."""
        self.settle()
        batch = [*self._pending, *drafts]
        self._pending.clear()
        self._writing = _WRITER.submit(self._events.append, batch, stream_id=self._stream_id)
        self._in_flight = batch

    def settle(self) -> None:
        """Wait for a `flush_soon` in flight.

        A batch that failed to write goes back to the front of the buffer, so the next write
        (`flush`, `flush_published`, `share`) retries it, still ahead of everything after it.
        """
        writing, self._writing = self._writing, None
        if writing is None:
            return
        try:
            self._written += writing.result()
        except Exception:
            self._pending[:0] = self._in_flight
        finally:
            self._in_flight = []

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
        """The step's stream as it stands, once the executor has exited.

        When the attempt's own start opened the stream (seq 1: no earlier attempt or pass),
        is written, and no other writer shared the stream, the stream is exactly what this
        attempt wrote, and is not read back.
        """
        self.settle()
        if self._pending or self._shared or not self._written or self._written[0].seq != 1:
            return self._events.read_stream(self._stream_id)
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
        )
        self._pending.clear()


def recorded_usages(
    events: EventStore, inp: StepExecuteInput | StepUsageInput, *attempts: int | None
) -> list[Usage]:
    """The step's recorded usage for each of `attempts` (None: every attempt), read once.

    The step's stream is its usage ledger.
    """
    return ledger_usages(events.read_stream(step_stream(inp.run_id, inp.step_key)), inp, *attempts)


def ledger_usages(
    ledger: Sequence[Event], inp: StepExecuteInput | StepUsageInput, *attempts: int | None
) -> list[Usage]:
    """The usage for each of `attempts` in the step's stream `ledger`, already read.

    A malformed usage event is a platform fault no retry can mend: the step fails for good.
    """
    try:
        return [usage_from_events(ledger, attempt=a) for a in attempts]
    except LedgerError as exc:
        raise StepFailure("LEDGER_CORRUPT", f"step {inp.step_key}: {exc}") from None


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
