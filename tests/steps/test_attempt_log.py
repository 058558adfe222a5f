"""An attempt's start goes with its end (or alone when slow); the stream keeps its order."""

import threading
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from activities.harness.ledger import AttemptLog
from activities.sandbox.bridge import BridgeLedger
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore, open_event_store
from schemas.events import SYSTEM_ACTOR, EventDraft
from schemas.scope import Scope
from tests.sandbox.bridge.support import STARTED, policy

STREAM = "run-1:step:a"


def draft(name: str) -> EventDraft:
    return EventDraft(
        event_id=f"run-1:{name}",
        type=f"step.{name}.v1",
        actor=SYSTEM_ACTOR,
        run_id="run-1",
        caused_by="run-1:run.compiled.v1",
        timestamp=datetime.now(UTC),
        payload={"step_key": "a"},
    )


@pytest.fixture
def store(tmp_path: Path):
    events = open_event_store(f"sqlite:///{tmp_path / 'forge.db'}")
    yield events
    events.close()


def log_for(store: EventStore) -> AttemptLog:
    # The drafts carry the default scope: the attempt's reads are scoped to its tenant.
    attempt = SimpleNamespace(stream_id=STREAM, inp=SimpleNamespace(scope=Scope.default()))
    return AttemptLog(store, attempt)  # type: ignore[arg-type]


def test_a_write_in_flight_lands_before_the_next_append(store: EventStore, monkeypatch):
    gate = threading.Event()
    append = store.append

    def slow(drafts, **kw):  # type: ignore[no-untyped-def]
        if drafts[0].event_id == "run-1:started":
            gate.wait(10)  # the start is still being written when the completion comes
        return append(drafts, **kw)

    monkeypatch.setattr(store, "append", slow)
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush_later(draft("preflight"), delay_s=0)  # a slow attempt: the write starts at once
    assert store.read_stream(STREAM) == []  # not waited for
    threading.Timer(0.2, gate.set).start()
    log.flush(draft("completed"))  # settles the start first
    assert [e.event_id for e in store.read_stream(STREAM)] == [
        "run-1:started",
        "run-1:preflight",
        "run-1:completed",
    ]


def test_a_failed_write_in_flight_is_retried_first_by_the_next_write(
    store: EventStore, monkeypatch
):
    append = store.append
    broken = True

    def flaky(drafts, **kw):  # type: ignore[no-untyped-def]
        if broken:
            raise OSError("database is locked")
        return append(drafts, **kw)

    monkeypatch.setattr(store, "append", flaky)
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush_later(draft("preflight"), delay_s=0)
    log.settle()  # the failure is not lost: the batch is buffered again
    with pytest.raises(OSError, match="locked"):
        log.share()  # the bridge's first use: the start must land before its events
    broken = False
    log.share()  # the bridge's next call writes the start first
    store.append([draft("tool")], stream_id=STREAM)
    log.flush(draft("completed"))
    assert [e.event_id for e in store.read_stream(STREAM)] == [
        "run-1:started",
        "run-1:preflight",
        "run-1:tool",
        "run-1:completed",
    ]


def test_the_bridge_ledger_settles_the_start_before_it_reads_the_stream(
    store: EventStore, tmp_path: Path
):
    calls: list[str] = []
    ledger = BridgeLedger(
        store,
        LocalArtifactStore(tmp_path / "artifacts"),
        policy=policy(),
        caused_by=STARTED,
        run_budget_refusal=lambda: None,
        before_first_use=lambda: calls.append("settled"),
    )
    assert calls == []  # built before the sandbox starts: nothing read yet
    ledger.next_index()
    ledger.dispatched_calls()
    assert calls == ["settled"]  # once, before the first read


def test_a_stream_only_this_attempt_wrote_is_not_read_back(store: EventStore, monkeypatch):
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush(draft("preflight"))
    read = store.read_stream
    monkeypatch.setattr(store, "read_stream", lambda *a: pytest.fail("read back"))
    assert [e.event_id for e in log.stream()] == ["run-1:started", "run-1:preflight"]
    assert [e.seq for e in log.stream()] == [1, 2]
    # Once another writer shares the stream, it is read.
    monkeypatch.setattr(store, "read_stream", read)
    log.share()
    store.append([draft("tool")], stream_id=STREAM)
    assert [e.event_id for e in log.stream()][-1] == "run-1:tool"


def test_a_stream_with_earlier_events_is_read(store: EventStore):
    store.append([draft("earlier")], stream_id=STREAM)  # an earlier attempt or pass
    log = log_for(store)
    log.flush(draft("started"))
    assert [e.event_id for e in log.stream()] == ["run-1:earlier", "run-1:started"]


def appends_counted(store: EventStore, monkeypatch) -> list[list[str]]:
    """Each append's event ids, in order."""
    batches: list[list[str]] = []
    append = store.append

    def counted(drafts, **kw):  # type: ignore[no-untyped-def]
        batches.append([d.event_id.split(":")[1] for d in drafts])
        return append(drafts, **kw)

    monkeypatch.setattr(store, "append", counted)
    return batches


def test_a_short_attempt_writes_its_start_with_its_end_in_one_transaction(
    store: EventStore, monkeypatch
):
    batches = appends_counted(store, monkeypatch)
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush_later(draft("preflight"))  # the default delay: the end comes first
    assert log.stream() == []  # the start is still buffered; the stream is read, not guessed
    log.flush(draft("completed"))
    assert batches == [["started", "preflight", "completed"]]
    assert [e.seq for e in store.read_stream(STREAM)] == [1, 2, 3]


def test_a_slow_attempt_writes_its_start_alone_while_it_runs(store: EventStore, monkeypatch):
    batches = appends_counted(store, monkeypatch)
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush_later(draft("preflight"), delay_s=0.05)
    for _ in range(1200):  # written by the writer thread, not by this one (a minute at most)
        if store.read_stream(STREAM):
            break
        threading.Event().wait(0.05)
    assert [e.event_id for e in store.read_stream(STREAM)] == ["run-1:started", "run-1:preflight"]
    log.flush(draft("completed"))
    assert batches == [["started", "preflight"], ["completed"]]


def test_an_attempt_that_ends_otherwise_still_records_its_start(store: EventStore):
    log = log_for(store)
    log.buffer(draft("started"))
    log.flush_later(draft("preflight"))
    log.close()  # a cancellation: neither a completion nor a failure was written
    assert [e.event_id for e in store.read_stream(STREAM)] == ["run-1:started", "run-1:preflight"]
    log.close()  # nothing left: no second write
    assert len(store.read_stream(STREAM)) == 2


def test_closing_does_not_mask_the_error_that_ended_the_attempt(store: EventStore, monkeypatch):
    def broken(drafts, **kw):  # type: ignore[no-untyped-def]
        raise OSError("disk I/O error")

    monkeypatch.setattr(store, "append", broken)
    log = log_for(store)
    log.buffer(draft("started"))
    log.close()  # the cancellation that ended the attempt stands; this write's failure does not
    monkeypatch.undo()
    assert store.read_stream(STREAM) == []
