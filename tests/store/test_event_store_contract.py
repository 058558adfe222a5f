"""One contract for the event store, run against SQLite and a real PostgreSQL 15."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import text, update

from activities.store.errors import (
    ConcurrencyError,
    ConflictError,
    MissingCauseError,
    StoreError,
)
from activities.store.events import EventStore, open_event_store
from activities.store.migrate import head_revision, upgrade
from activities.store.records import ChainVerification, content_hash, normalize
from activities.store.tables import events, metadata
from schemas.artifacts import ArtifactRef, Provenance
from schemas.error_codes import ErrorCode
from schemas.events import Event, EventDraft
from tests.store.postgres import PostgresServer, create_database, drop_database
from tests.support.errors import raises_code

T0 = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)


def draft(
    tenant: str,
    n: int,
    *,
    type: str = "step.completed.v1",
    caused_by: str | None = "cause",
    run_id: str | None = None,
    payload: dict[str, Any] | None = None,
    event_id: str | None = None,
) -> EventDraft:
    return EventDraft(
        event_id=event_id or f"{tenant}:e{n}",
        type=type,
        tenant_id=tenant,
        run_id=run_id,
        caused_by=caused_by,
        timestamp=T0 + timedelta(seconds=n),
        payload={"n": n} if payload is None else payload,
    )


def root(tenant: str, n: int = 0, **kw: Any) -> EventDraft:
    return draft(tenant, n, type="run.started.v1", caused_by=None, **kw)


def artifact(content: str, path: str = "output/report.csv") -> ArtifactRef:
    digest = "sha256:" + content * 64
    return ArtifactRef(artifact_id=digest, path=path, sha256=digest, size_bytes=10)


class EventStoreContract:
    """Every backend must pass these; subclasses provide `database_url`."""

    @pytest.fixture
    def store(self, database_url: str) -> Iterator[EventStore]:
        store = open_event_store(database_url)
        yield store
        store.close()

    @pytest.fixture
    def tenant(self) -> str:
        # Tests share a database per class; a tenant of their own keeps their chains apart.
        return f"t-{uuid.uuid4().hex[:12]}"

    def test_append_and_read_stream(self, store: EventStore, tenant: str) -> None:
        stream = f"{tenant}:run"
        stored = store.append(
            [root(tenant), draft(tenant, 1), draft(tenant, 2)], stream_id=stream, expected_seq=0
        )
        assert [e.seq for e in stored] == [1, 2, 3]
        assert all(isinstance(e, Event) and e.stream_id == stream for e in stored)
        assert store.read_stream(stream) == stored
        assert store.read_stream(stream, after_seq=2) == stored[2:]
        assert store.read_stream("no-such-stream") == []
        more = store.append([draft(tenant, 3)], stream_id=stream, expected_seq=3)
        assert more[0].seq == 4

    def test_round_trips_timestamps_and_json(self, store: EventStore, tenant: str) -> None:
        paris = timezone(timedelta(hours=2))
        payload = {"amount": 12.5, "whole": 2.0, "name": "Zoë 🚀", "nested": {"b": [1, None]}}
        original = root(tenant, payload=payload).model_copy(
            update={"timestamp": T0.astimezone(paris)}
        )
        [stored] = store.append([original], stream_id=f"{tenant}:s")
        assert stored.timestamp == T0 and stored.timestamp.utcoffset() == timedelta(0)
        assert stored.payload == payload
        assert store.read_stream(f"{tenant}:s") == [stored]
        assert store.verify_chain(tenant).ok

    def test_stale_expected_seq_raises_and_writes_nothing(
        self, store: EventStore, tenant: str
    ) -> None:
        stream = f"{tenant}:run"
        store.append([root(tenant), draft(tenant, 1)], stream_id=stream, expected_seq=0)
        with pytest.raises(ConcurrencyError) as caught:
            store.append([draft(tenant, 2), draft(tenant, 3)], stream_id=stream, expected_seq=1)
        assert (caught.value.stream_id, caught.value.expected, caught.value.actual) == (
            stream,
            1,
            2,
        )
        assert stream in str(caught.value) and "expected 1" in str(caught.value)
        assert len(store.read_stream(stream)) == 2
        assert store.list_events(tenant_id=tenant) == store.read_stream(stream)
        verification = store.verify_chain(tenant)
        assert verification.ok and verification.checked == 2

    def test_idempotent_append_returns_the_stored_events(
        self, store: EventStore, tenant: str
    ) -> None:
        stream = f"{tenant}:run"
        batch = [root(tenant), draft(tenant, 1)]
        first = store.append(batch, stream_id=stream, expected_seq=0)
        # A retried activity repeats the same call, stale expected_seq included.
        again = store.append(batch, stream_id=stream, expected_seq=0)
        assert again == first
        # Same instant in another offset is the same event.
        new_york = timezone(timedelta(hours=-5))
        shifted = batch[1].model_copy(update={"timestamp": batch[1].timestamp.astimezone(new_york)})
        assert store.append([shifted], stream_id=stream) == first[1:]
        # Mixed: the stored one comes back as stored, the new one is appended after it.
        mixed = store.append([batch[1], draft(tenant, 2)], stream_id=stream)
        assert mixed[0] == first[1] and mixed[1].seq == 3
        assert len(store.read_stream(stream)) == 3
        assert store.verify_chain(tenant).checked == 3

    def test_batches_of_several_streams_append_in_one_transaction(
        self, store: EventStore, tenant: str
    ) -> None:
        run, trail = f"{tenant}:run", f"{tenant}:trail"
        batches = [(run, [root(tenant)]), (trail, [draft(tenant, 1), draft(tenant, 2)])]
        stored = store.append_batches(batches)
        assert [(e.stream_id, e.seq) for e in stored] == [(run, 1), (trail, 1), (trail, 2)]
        # One chain through both streams, in batch order.
        assert [e.prev_hash for e in stored[1:]] == [e.content_hash for e in stored[:-1]]
        # A conflict in a later batch writes nothing of the earlier ones.
        with pytest.raises(ConflictError, match="already stored in stream"):
            store.append_batches([(run, [draft(tenant, 3)]), (trail, [root(tenant)])])
        assert [e.event_id for e in store.read_stream(run)] == [stored[0].event_id]
        # A retried call returns what it stored the first time.
        assert store.append_batches(batches) == stored
        assert store.verify_chain(tenant).checked == 3

    def test_same_event_id_with_other_content_is_a_conflict(
        self, store: EventStore, tenant: str
    ) -> None:
        stream = f"{tenant}:run"
        store.append([root(tenant)], stream_id=stream)
        changed = root(tenant, payload={"n": "different"})
        with pytest.raises(ConflictError, match="different content"):
            store.append([draft(tenant, 5), changed], stream_id=stream)
        with pytest.raises(ConflictError, match="already stored in stream"):
            store.append([root(tenant)], stream_id=f"{tenant}:other")
        with pytest.raises(ConflictError, match="twice in one append"):
            store.append(
                [draft(tenant, 7), draft(tenant, 8, event_id=f"{tenant}:e7")], stream_id=stream
            )
        assert len(store.read_stream(stream)) == 1
        assert store.read_stream(f"{tenant}:other") == []

    def test_caused_by_is_required_except_for_root_events(
        self, store: EventStore, tenant: str
    ) -> None:
        stream = f"{tenant}:run"
        with pytest.raises(MissingCauseError) as caught:
            store.append([root(tenant), draft(tenant, 1, caused_by=None)], stream_id=stream)
        assert "step.completed.v1" in str(caught.value)
        assert caught.value.event_type == "step.completed.v1"
        assert store.read_stream(stream) == []
        submitted = draft(tenant, 2, type="run.submitted.v1", caused_by=None)
        assert len(store.append([root(tenant), submitted], stream_id=stream)) == 2

    def test_hash_chain_links_each_tenant(self, store: EventStore, tenant: str) -> None:
        other = f"{tenant}-other"
        a = store.append([root(tenant), draft(tenant, 1)], stream_id=f"{tenant}:a")
        b = store.append([draft(tenant, 2)], stream_id=f"{tenant}:b")
        c = store.append([root(other)], stream_id=f"{other}:a")
        chain = a + b
        assert chain[0].prev_hash is None
        for previous, current in zip(chain, chain[1:], strict=False):
            assert current.prev_hash == previous.content_hash
        for stored, source in zip(
            chain, [root(tenant), draft(tenant, 1), draft(tenant, 2)], strict=True
        ):
            assert stored.content_hash == content_hash(normalize(source))
        assert c[0].prev_hash is None  # another tenant starts its own chain
        assert store.list_events(tenant_id=tenant) == chain
        result = store.verify_chain(tenant)
        assert (result.ok, result.checked, result.first_broken) == (True, 3, None)

    def test_verify_names_the_first_broken_link(self, store: EventStore, tenant: str) -> None:
        stored = store.append(
            [root(tenant), *(draft(tenant, n) for n in range(1, 5))], stream_id=f"{tenant}:run"
        )
        victim = stored[2]
        with store.engine.begin() as conn:
            conn.execute(
                update(events)
                .where(events.c.event_id == victim.event_id)
                .values(payload={"n": 999})
            )
        result = store.verify_chain(tenant)
        assert not result.ok and result.first_broken is not None
        assert result.first_broken.tenant_seq == 3
        assert result.first_broken.event_id == victim.event_id
        assert "content" in result.first_broken.reason
        assert result.checked == 3

        # Re-sealing the tampered row moves the break to the link after it.
        forged = content_hash(normalize(victim.model_copy(update={"payload": {"n": 999}})))
        with store.engine.begin() as conn:
            conn.execute(
                update(events)
                .where(events.c.event_id == victim.event_id)
                .values(content_hash=forged)
            )
        result = store.verify_chain(tenant)
        assert result.first_broken is not None
        assert result.first_broken.tenant_seq == 4
        assert result.first_broken.event_id == stored[3].event_id
        assert "prev_hash" in result.first_broken.reason

    @pytest.mark.parametrize(("deleted", "reason"), [(2, "head records 3"), (1, "missing")])
    def test_verify_notices_a_deleted_event(
        self, store: EventStore, tenant: str, deleted: int, reason: str
    ) -> None:
        stored = store.append([root(tenant), draft(tenant, 1), draft(tenant, 2)], stream_id=tenant)
        with store.engine.begin() as conn:
            conn.execute(events.delete().where(events.c.event_id == stored[deleted].event_id))
        result = store.verify_chain(tenant)
        assert result.first_broken is not None and result.first_broken.tenant_seq == 3
        assert reason in result.first_broken.reason

    def test_verify_of_an_unknown_tenant_is_trivially_intact(self, store: EventStore) -> None:
        result = store.verify_chain(f"nobody-{uuid.uuid4().hex}")
        assert (result.ok, result.checked) == (True, 0)

    def test_list_filters(self, store: EventStore, tenant: str) -> None:
        other = f"{tenant}-x"
        store.append(
            [
                root(tenant, run_id="r1"),
                draft(tenant, 1, run_id="r1"),
                draft(tenant, 2, run_id="r2"),
            ],
            stream_id=f"{tenant}:1",
        )
        store.append([root(other, run_id="r1")], stream_id=f"{other}:1")
        mine = store.list_events(tenant_id=tenant)
        assert [e.payload["n"] for e in mine] == [0, 1, 2]
        assert len(store.list_events(tenant_id=tenant, run_id="r1")) == 2
        assert len(store.list_events(tenant_id=tenant, type="run.started.v1")) == 1
        assert len(store.list_events(tenant_id=tenant, limit=2)) == 2
        both = store.list_events(run_id="r1", type="run.started.v1")
        assert {e.scope.tenant for e in both} >= {tenant, other}
        assert tenant in store.tenants() and other in store.tenants()

    def test_publish_is_idempotent_and_versions_new_bytes(
        self, store: EventStore, tenant: str
    ) -> None:
        run = f"{tenant}-run"
        prov = Provenance(run_id=run, step_key="render", contract_hash="sha256:" + "c" * 64)
        first = store.publish_artifact(artifact("a"), prov, tenant_id=tenant)
        assert (first.version, first.created) == (1, True)
        retry = store.publish_artifact(
            artifact("a"), prov.model_copy(update={"attempt": 2}), tenant_id=tenant
        )
        assert (retry.version, retry.created) == (1, False)
        assert retry.provenance == prov  # the first publication stands
        second = store.publish_artifact(artifact("b"), prov, tenant_id=tenant)
        assert (second.version, second.created) == (2, True)
        # Older bytes at the path again: their publication, not a new version.
        older = store.publish_artifact(artifact("a"), prov, tenant_id=tenant)
        assert (older.version, older.created) == (1, False)
        elsewhere = store.publish_artifact(
            artifact("b", "output/other.csv"), prov, tenant_id=tenant
        )
        assert elsewhere.version == 1
        listed = store.list_published(run)
        assert [(p.path, p.version) for p in listed] == [
            ("output/other.csv", 1),
            ("output/report.csv", 1),
            ("output/report.csv", 2),
        ]
        assert all(not p.created for p in listed)
        latest = store.latest(run, "output/report.csv")
        assert latest is not None and latest.version == 2 and latest.ref == artifact("b")
        assert latest.step_key == "render" and latest.published_at.tzinfo is not None
        assert store.latest(run, "nope") is None
        assert store.list_published("no-run") == []
        with pytest.raises(ValueError, match="content-addressed"):
            store.publish_artifact(
                ArtifactRef(artifact_id="x", path="p", sha256="abc", size_bytes=1),
                prov,
                tenant_id=tenant,
            )

    def test_outputs_are_published_in_the_transaction_that_records_them(
        self, store: EventStore, tenant: str
    ) -> None:
        run = f"{tenant}-run"
        prov = Provenance(run_id=run, step_key="render", contract_hash="sha256:" + "c" * 64)
        stream = f"{tenant}:step"

        def events_for(published: list[Any]) -> list[EventDraft]:
            return [
                draft(tenant, i, payload={"path": p.path, "version": p.version})
                for i, p in enumerate(published, start=1)
            ]

        stored = store.publish_and_append(
            [(artifact("a"), prov), (artifact("b", "output/x.csv"), prov)],
            events_for,
            stream_id=stream,
            tenant_id=tenant,
        )
        assert [e.payload for e in stored] == [
            {"path": "output/report.csv", "version": 1},
            {"path": "output/x.csv", "version": 1},
        ]
        # A retry publishes nothing new and appends nothing twice.
        again = store.publish_and_append(
            [(artifact("a"), prov)], events_for, stream_id=stream, tenant_id=tenant
        )
        assert [e.event_id for e in again] == [stored[0].event_id]
        assert len(store.read_stream(stream)) == 2

        def conflicting(published: list[Any]) -> list[EventDraft]:
            return [draft(tenant, 1, payload={"other": "content"})]  # a stored id, new content

        with pytest.raises(ConflictError):
            store.publish_and_append(
                [(artifact("d"), prov)], conflicting, stream_id=stream, tenant_id=tenant
            )
        # The failed append took its publication with it.
        assert [p.version for p in store.list_published(run) if p.path == "output/report.csv"] == [
            1
        ]

    def test_migrated_schema_matches_tables(self, store: EventStore) -> None:
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, metadata) == []
            assert context.get_current_revision() == head_revision()

    def test_concurrent_appends_keep_one_unbroken_chain(
        self, store: EventStore, tenant: str
    ) -> None:
        threads_n, per_thread = 8, 12
        errors: list[BaseException] = []
        barrier = threading.Barrier(threads_n)

        def work(worker: int) -> None:
            try:
                barrier.wait()
                for i in range(per_thread):
                    n = worker * 1000 + i
                    # Half the workers share one stream, half have their own.
                    stream = f"{tenant}:shared" if worker % 2 else f"{tenant}:w{worker}"
                    store.append([draft(tenant, n)], stream_id=stream)
            except BaseException as exc:  # handed to the main thread, which re-raises
                errors.append(exc)

        done = threading.Event()
        verdicts: list[ChainVerification] = []

        def verify_while_appending() -> None:
            # Verification during appends sees a consistent snapshot: never a false break.
            while not done.is_set():
                verdicts.append(store.verify_chain(tenant))

        threads = [threading.Thread(target=work, args=(w,)) for w in range(threads_n)]
        checker = threading.Thread(target=verify_while_appending)
        checker.start()
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        done.set()
        checker.join()
        assert errors == []
        assert verdicts and [v for v in verdicts if not v.ok] == []
        total = threads_n * per_thread
        result = store.verify_chain(tenant)
        assert (result.ok, result.checked) == (True, total)
        shared = store.read_stream(f"{tenant}:shared")
        assert [e.seq for e in shared] == list(range(1, total // 2 + 1))

    def test_racing_writers_with_the_same_expected_seq_one_wins(
        self, store: EventStore, tenant: str
    ) -> None:
        stream = f"{tenant}:race"
        outcomes: list[str] = []
        barrier = threading.Barrier(6)

        def work(worker: int) -> None:
            barrier.wait()
            try:
                store.append([draft(tenant, worker)], stream_id=stream, expected_seq=0)
                outcomes.append("won")
            except ConcurrencyError:
                outcomes.append("lost")

        threads = [threading.Thread(target=work, args=(w,)) for w in range(6)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert sorted(outcomes) == ["lost"] * 5 + ["won"]
        assert len(store.read_stream(stream)) == 1
        assert store.verify_chain(tenant).ok


class TestSqlite(EventStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('events') / 'forge.db'}"

    def test_opening_migrates_and_enables_wal(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path / 'new' / 'forge.db'}"
        with open_event_store(url) as store:
            with store.engine.connect() as conn:
                assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
                assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
                assert conn.execute(text("PRAGMA busy_timeout")).scalar() >= 1000
                revision = MigrationContext.configure(conn).get_current_revision()
            assert revision == head_revision()


class TestPostgres(EventStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url

    def test_unmigrated_database_says_to_run_forge_db_upgrade(
        self, postgres_server: PostgresServer
    ) -> None:
        name = create_database(postgres_server)
        try:
            with raises_code(ErrorCode.SCHEMA_NOT_MIGRATED, match="forge db upgrade") as refused:
                open_event_store(postgres_server.url(name))
            assert isinstance(refused.value, StoreError)  # what the CLI's store guards catch
            assert upgrade(postgres_server.url(name)) == head_revision()
            assert upgrade(postgres_server.url(name)) == head_revision()  # a no-op the 2nd time
            open_event_store(postgres_server.url(name)).close()
        finally:
            drop_database(postgres_server, name)

    def test_plain_postgresql_urls_use_psycopg(self, database_url: str) -> None:
        plain = database_url.replace("postgresql+psycopg://", "postgresql://")
        with open_event_store(plain) as store:
            assert store.engine.url.drivername == "postgresql+psycopg"
            assert store.engine.dialect.name == "postgresql"
