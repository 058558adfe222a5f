"""An attempt's start may be written beside its sandbox; the step's stream keeps its order."""

import threading
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace

import pytest

from activities.sandbox.bridge import BridgeLedger
from activities.steps.ledger import AttemptLog
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore, open_event_store
from schemas.events import SYSTEM_ACTOR, EventDraft
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
    return AttemptLog(store, SimpleNamespace(stream_id=STREAM))  # type: ignore[arg-type]


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
    log.flush_soon(draft("preflight"))
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
    log.flush_soon(draft("preflight"))
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
    log.flush_soon(draft("preflight"))
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
