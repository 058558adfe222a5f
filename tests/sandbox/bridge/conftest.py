"""Fixtures of the bridge tests: an event store with a started step, an artifact store."""

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore, open_event_store
from schemas.events import EventDraft
from tests.sandbox.bridge.support import RUN, STARTED, STEP, STREAM


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with open_event_store(f"sqlite:///{tmp_path / 'forge.db'}") as events:
        now = datetime.now(UTC)
        run_started = EventDraft(
            event_id=f"{RUN}:run.started.v1", type="run.started.v1", run_id=RUN, timestamp=now
        )
        events.append([run_started], stream_id=f"{RUN}:run")
        started = EventDraft(
            event_id=STARTED,
            type="step.started.v1",
            run_id=RUN,
            caused_by=run_started.event_id,
            timestamp=now,
            payload={"step_key": STEP, "attempt": 1},
        )
        events.append([started], stream_id=STREAM)
        yield events


@pytest.fixture
def artifacts(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")
