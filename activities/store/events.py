"""The append-only event store: per-stream sequences, idempotent appends, per-tenant hash chain."""

from __future__ import annotations

import hashlib
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar, NamedTuple

from sqlalchemy import Engine, Select, bindparam, select, text
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from activities.store.admissions import end_on_terminal_events
from activities.store.engine import WRITE_OPTION, Backend, backend_of, create_store_engine
from activities.store.errors import ConcurrencyError, ConflictError
from activities.store.event_reads import EventReads
from activities.store.masking import masked_drafts
from activities.store.migrate import check_at_head, upgrade_engine
from activities.store.publish import PublishIndex
from activities.store.queries import Statements
from activities.store.records import (
    ChainBreak,
    ChainVerification,
    PublishedArtifact,
    draft_row,
    event_from_row,
    prepare_batch,
)
from activities.store.tables import events, tenant_heads
from activities.store.tenancy import scoped, use_tenant
from schemas.event_ids import guard_stream
from schemas.events import Event, EventDraft
from schemas.names import GUARD_STREAM

__all__ = [
    "ChainBreak",
    "ChainVerification",
    "EventStore",
    "PostgresEventStore",
    "PublishedArtifact",
    "SqliteEventStore",
    "open_event_store",
]


class _Head(NamedTuple):
    last_seq: int
    last_hash: str | None


class EventStore(PublishIndex, EventReads):
    """One event log over SQLAlchemy Core; subclasses only say how each backend locks."""

    backend: ClassVar[Backend]

    def __init__(self, engine: Engine) -> None:
        self._engine = engine
        self._q = Statements(self._locking, self._insert_ignore_heads())

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> EventStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # ---- appending -------------------------------------------------------------------------

    def append(
        self, drafts: Sequence[EventDraft], *, stream_id: str, expected_seq: int | None = None
    ) -> list[Event]:
        """Append `drafts` to `stream_id` in one transaction and return them as stored.

        An event_id that is already stored with the same content is returned as stored and not
        written again, so a retried activity never duplicates events. Only when something new
        is written is `expected_seq` (the stream's last seq the caller saw, 0 for a new stream)
        checked.

        Raises:
            MissingCauseError: A non-root event has no `caused_by`.
            ConflictError: An event_id is stored with different content or in another stream.
            ConcurrencyError: The stream's last seq is not `expected_seq`; nothing was written.
        """
        if not drafts:
            return []
        with self._collisions(stream_id), self._write() as conn:
            return self._append_in(conn, drafts, stream_id=stream_id, expected_seq=expected_seq)

    def append_batches(self, batches: Sequence[tuple[str, Sequence[EventDraft]]]) -> list[Event]:
        """Each (stream_id, drafts) appended as `append` would, all in one transaction, in order."""
        streams = ", ".join(dict.fromkeys(stream for stream, _ in batches))
        with self._collisions(streams), self._write() as conn:
            return [
                event
                for stream_id, drafts in batches
                for event in self._append_in(conn, drafts, stream_id=stream_id)
            ]

    def _append_in(
        self,
        conn: Connection,
        drafts: Sequence[EventDraft],
        *,
        stream_id: str,
        expected_seq: int | None = None,
    ) -> list[Event]:
        """`append` inside the caller's write transaction.

        Credentials in a payload are masked before it is hashed or written, and each masked
        event is followed by a guard.masked.v1 in the tenant's `guard:` stream, in the same
        transaction (compiler/ladder/secrets/mask.py).
        """
        drafts, findings = masked_drafts(drafts, stream_id)
        if findings and not stream_id.startswith(GUARD_STREAM):
            appended = self._append_in(conn, drafts, stream_id=stream_id, expected_seq=expected_seq)
            for draft in findings:
                self._append_in(conn, [draft], stream_id=guard_stream(draft.scope.tenant))
            return appended
        batch = prepare_batch(drafts)
        if not batch:
            return []
        use_tenant(conn, _one_tenant(drafts, stream_id))
        self._lock_key(conn, f"stream\x00{stream_id}")
        stored = self._stored(conn, batch, stream_id)
        new = [(d, h) for d, h in batch.values() if d.event_id not in stored]
        if new:
            stored.update(self._insert(conn, new, stream_id, expected_seq))
            end_on_terminal_events(conn, [d for d, _ in new])  # a run's quota slot frees
        return [stored[d.event_id] for d in drafts]

    @staticmethod
    @contextmanager
    def _collisions(stream_id: str) -> Iterator[None]:
        try:
            yield
        except IntegrityError as exc:
            # Reached only when a writer outside this stream's lock stored the same event_id.
            raise ConflictError(
                f"append to stream {stream_id!r} collided with a concurrent write of the same "
                f"event_id: {exc.orig}"
            ) from exc

    def _stored(
        self, conn: Connection, batch: dict[str, tuple[EventDraft, str]], stream_id: str
    ) -> dict[str, Event]:
        rows = conn.execute(self._q.stored, {"ids": list(batch)}).mappings()
        found: dict[str, Event] = {}
        for row in rows:
            _, digest = batch[row["event_id"]]
            if row["content_hash"] != digest:
                raise ConflictError(
                    f"event {row['event_id']!r} is already stored with different content "
                    f"(stored {row['content_hash']}, appended {digest}); event ids must not be "
                    "reused for new content"
                )
            if row["stream_id"] != stream_id:
                raise ConflictError(
                    f"event {row['event_id']!r} is already stored in stream "
                    f"{row['stream_id']!r}, not {stream_id!r}"
                )
            found[row["event_id"]] = event_from_row(row)
        return found

    def _insert(
        self,
        conn: Connection,
        new: list[tuple[EventDraft, str]],
        stream_id: str,
        expected_seq: int | None,
    ) -> dict[str, Event]:
        last = conn.execute(self._q.last_seq, {"stream": stream_id}).scalar_one()
        if expected_seq is not None and last != expected_seq:
            raise ConcurrencyError(stream_id, expected_seq, last)
        heads = self._lock_heads(conn, sorted({d.scope.tenant for d, _ in new}))
        rows: list[dict[str, Any]] = []
        written: dict[str, Event] = {}
        for draft, digest in new:
            head = heads[draft.scope.tenant]
            last += 1
            position = {"stream_id": stream_id, "seq": last, "content_hash": digest}
            row = {
                **draft_row(draft),
                **position,
                "tenant_seq": head.last_seq + 1,
                "prev_hash": head.last_hash,
                "signature": None,
            }
            rows.append(row)
            written[draft.event_id] = event_from_row(row)
            heads[draft.scope.tenant] = _Head(head.last_seq + 1, digest)
        conn.execute(self._q.insert, rows)
        conn.execute(
            self._q.set_head,
            [{"t_id": t, "t_seq": h.last_seq, "t_hash": h.last_hash} for t, h in heads.items()],
        )
        return written

    def _lock_heads(self, conn: Connection, tenant_ids: list[str]) -> dict[str, _Head]:
        """The tenants' chain heads, locked; a tenant's first event creates its head first."""
        heads = self._read_heads(conn, tenant_ids)
        missing = [t for t in tenant_ids if t not in heads]
        if missing:  # once per tenant: every later append finds its head in one statement
            conn.execute(
                self._q.new_heads,
                [{"tenant_id": t, "last_seq": 0, "last_hash": None} for t in missing],
            )
            heads = self._read_heads(conn, tenant_ids)
        return heads

    def _read_heads(self, conn: Connection, tenant_ids: list[str]) -> dict[str, _Head]:
        rows = conn.execute(self._q.heads, {"tenants": tenant_ids})
        return {r.tenant_id: _Head(r.last_seq, r.last_hash) for r in rows}

    # ---- what the backends differ in -------------------------------------------------------

    @contextmanager
    def _write(self) -> Iterator[Connection]:
        # Unscoped until _append_in / _publish_in scope it to the tenant they write for.
        with self._engine.connect() as conn:
            conn.execution_options(**{WRITE_OPTION: True})
            with conn.begin():
                yield conn

    @contextmanager
    def _reading(self, tenant_id: str | None) -> Iterator[Connection]:
        if tenant_id is None:
            with self._engine.connect() as conn:
                yield conn
        else:
            with scoped(self._engine, tenant_id) as conn:
                yield conn

    @abstractmethod
    def _lock_key(self, conn: Connection, key: str) -> None:
        """Serialize writers of one key (a stream, a published path) until commit."""

    @abstractmethod
    def _insert_ignore_heads(self) -> Any:
        """An INSERT into tenant_heads that skips tenants already present."""

    @abstractmethod
    def _locking(self, query: Select[Any]) -> Select[Any]:
        """`query` made to lock the rows it reads until commit."""


class SqliteEventStore(EventStore):
    """SQLite: BEGIN IMMEDIATE already makes each write transaction the only writer."""

    backend = "sqlite"  # a WAL read transaction already sees one snapshot throughout
    _tenant_list = select(tenant_heads.c.tenant_id).order_by(tenant_heads.c.tenant_id)
    _run_tenant = (
        select(events.c.tenant_id)
        .where(events.c.run_id == bindparam("run"))
        .order_by(events.c.tenant_seq)
        .limit(1)
    )

    def _lock_key(self, conn: Connection, key: str) -> None:
        return None

    def _insert_ignore_heads(self) -> Any:
        return sqlite_insert(tenant_heads).on_conflict_do_nothing(index_elements=["tenant_id"])

    def _locking(self, query: Select[Any]) -> Select[Any]:
        return query


class PostgresEventStore(EventStore):
    """PostgreSQL: row locks on tenant_heads, transaction advisory locks on streams."""

    backend = "postgresql"
    # READ COMMITTED takes a new snapshot per statement; a multi-statement read needs one.
    _snapshot = {"isolation_level": "REPEATABLE READ"}
    # The SECURITY DEFINER function of migration 0008: the tenant ids and nothing else.
    _tenant_list = text("SELECT forge_event_tenants()")
    _run_tenant = text("SELECT forge_run_tenant(:run)")

    def _lock_key(self, conn: Connection, key: str) -> None:
        # Advisory locks take a bigint; a collision between two keys only serializes them.
        lock_id = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_id})

    def _insert_ignore_heads(self) -> Any:
        return pg_insert(tenant_heads).on_conflict_do_nothing(index_elements=["tenant_id"])

    def _locking(self, query: Select[Any]) -> Select[Any]:
        return query.with_for_update()


def open_event_store(database_url: str) -> EventStore:
    """Open the event store at `database_url` (sqlite:///PATH or postgresql+psycopg://...).

    SQLite is migrated on open (the embedded default needs no setup step). PostgreSQL must
    already be at the newest schema: run `forge db upgrade` first.

    Raises:
        ValueError: The URL is malformed or names an unsupported backend.
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations.
    """
    engine = create_store_engine(database_url)
    try:
        if backend_of(engine.url) == "sqlite":
            upgrade_engine(engine)
            return SqliteEventStore(engine)
        check_at_head(engine)
        return PostgresEventStore(engine)
    except BaseException:
        engine.dispose()
        raise


def _one_tenant(drafts: Sequence[EventDraft], stream_id: str) -> str:
    """The one tenant a batch writes for; a transaction is scoped to one tenant at a time."""
    tenant_ids = sorted({d.scope.tenant for d in drafts})
    if len(tenant_ids) != 1:
        raise ValueError(
            f"one append to stream {stream_id!r} carries events of tenants {tenant_ids}: "
            "each tenant's events go in an append of their own"
        )
    return tenant_ids[0]
