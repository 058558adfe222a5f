"""Maskings in log lines, failures and CLI lines become guard.output_masked.v1 events (issue 18
§2), in the tenant they belong to, on SQLite and a real PostgreSQL.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine

from activities import masked_output
from activities.errors import mask_failure
from activities.store.events import EventStore, open_event_store
from activities.store.migrate import upgrade
from activities.store.output_masking import record_noted
from compiler.ladder.secrets.checksums import github_token
from compiler.ladder.secrets.mask import mask_text
from schemas.events import EventDraft
from schemas.guard import GUARD_OUTPUT_MASKED
from schemas.scope import Scope
from workers.process import logmask
from workers.process.guard_recorder import record_now

SECRET = github_token("ghp", "Z9yXw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0")  # checksum and all


def guard_events(store: EventStore, tenant: str) -> list:
    return [e for e in store.read_stream(f"guard:{tenant}") if e.type == GUARD_OUTPUT_MASKED]


class OutputMaskingContract:
    @pytest.fixture
    def store(self, database_url: str) -> Iterator[EventStore]:
        store = open_event_store(database_url)
        yield store
        store.close()

    def test_a_masked_log_line_is_an_event_naming_the_logger_and_never_the_value(
        self, store: EventStore
    ) -> None:
        logmask.install()
        masked_output.act_for(Scope.of_tenant("logs-tenant"))
        logging.getLogger("forge.test.sink").warning("connecting with token %s", SECRET)
        assert record_noted(store) == 1
        [event] = guard_events(store, "logs-tenant")
        assert event.payload["sink"] == "log"
        assert event.payload["source"] == "forge.test.sink"
        assert [f["detector"] for f in event.payload["findings"]] == ["github_token"]
        assert SECRET not in event.model_dump_json()
        assert event.caused_by is None and event.run_id is None
        assert masked_output.pending() == 0

    def test_a_masking_inside_a_run_is_recorded_in_the_runs_tenant(self, store: EventStore) -> None:
        store.append(
            [
                EventDraft(
                    event_id="run-acme-1:started",
                    type="run.started.v1",
                    scope=Scope.of_tenant("acme-out"),
                    run_id="run-acme-1",
                    timestamp=datetime.now(UTC),
                )
            ],
            stream_id="run:run-acme-1",
        )
        found = mask_text(f"token={SECRET}")[1]
        # As a failure converted in that run's activity notes it (the workflow id is the run id).
        masked_output._queue.append(
            masked_output.Noted(
                "failure",
                "activity run_step (attempt 2)",
                tuple(found),
                "run-acme-1",
                None,
                datetime.now(UTC),
            )
        )
        masked_output.act_for(Scope.of_tenant("someone-else"))
        masked_output.note("cli", "forge status", found)  # no run: the acting scope
        record_noted(store)
        [in_run] = guard_events(store, "acme-out")
        assert (in_run.run_id, in_run.payload["sink"]) == ("run-acme-1", "failure")
        assert in_run.payload["workflow_id"] == "run-acme-1"
        assert in_run.payload["source"] == "activity run_step (attempt 2)"
        [outside] = guard_events(store, "someone-else")
        assert (outside.run_id, outside.payload["sink"]) == (None, "cli")
        assert store.verify_chain("acme-out").ok and store.verify_chain("someone-else").ok

    def test_a_full_queue_drops_the_oldest_and_the_next_event_counts_them(
        self, store: EventStore
    ) -> None:
        masked_output.act_for(Scope.of_tenant("flood"))
        found = mask_text(SECRET)[1]
        for n in range(masked_output.CAPACITY + 7):
            masked_output.note("log", f"flood.{n}", found)
        assert record_noted(store) == masked_output.CAPACITY
        written = guard_events(store, "flood")
        assert len(written) == masked_output.CAPACITY
        assert written[0].payload["dropped"] == 7
        assert written[0].payload["source"] == "flood.7"  # the oldest seven were dropped
        assert sum(e.payload.get("dropped", 0) for e in written) == 7

    def test_a_failure_is_masked_in_its_failure_and_noted(self, store: EventStore) -> None:
        from temporalio.api.failure.v1 import Failure

        failure = Failure(message=f"login failed for {SECRET}", stack_trace=f"at x\n{SECRET}")
        failure.cause.message = f"cause: password={SECRET}"
        masked_output.act_for(Scope.of_tenant("failures"))
        mask_failure(failure)
        assert SECRET not in str(failure)
        record_noted(store)
        [event] = guard_events(store, "failures")
        assert event.payload["sink"] == "failure" and event.payload["source"] == "process"
        assert len(event.payload["findings"]) == 3  # message, stack trace, cause

    def test_a_store_that_fails_keeps_the_notes_for_the_next_drain(
        self, store: EventStore, database_url: str
    ) -> None:
        masked_output.act_for(Scope.of_tenant("kept"))
        masked_output.note("log", "kept.logger", mask_text(SECRET)[1])
        down = open_event_store(database_url)
        down.engine.dispose()
        down._engine = create_engine(_unreachable(database_url))  # the database is down
        assert record_now(down) == 0
        assert masked_output.pending() == 1
        assert record_now(store) == 1
        assert [e.payload["source"] for e in guard_events(store, "kept")] == ["kept.logger"]


def _unreachable(database_url: str) -> str:
    if database_url.startswith("sqlite"):
        return "sqlite:////dev/null/forge.db"
    return database_url.rsplit("/", 1)[0] + "/no_such_database"


class TestSqlite(OutputMaskingContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('events') / 'forge.db'}"


class TestPostgres(OutputMaskingContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url
