"""SQLAlchemy engines for the event store: SQLite (embedded) and PostgreSQL via psycopg 3."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL, Connection, make_url
from sqlalchemy.exc import ArgumentError

__all__ = [
    "Backend",
    "backend_of",
    "create_store_engine",
    "lock_key",
    "normalize_url",
    "write_transaction",
]

Backend = Literal["sqlite", "postgresql"]

# Execution option a write path sets so the SQLite BEGIN takes the write lock up front.
WRITE_OPTION = "forge_write"
_BUSY_TIMEOUT_MS = 30_000


def normalize_url(database_url: str) -> URL:
    """Parse a database URL and pin PostgreSQL to the psycopg 3 driver Forge ships with.

    Raises:
        ValueError: The URL does not parse or names a backend Forge does not support.
    """
    try:
        url = make_url(database_url)
    except ArgumentError as exc:
        raise ValueError(f"{database_url!r} is not a database URL: {exc}") from None
    backend = url.get_backend_name()
    if backend in ("postgres", "postgresql"):  # "postgres" is the Heroku-style alias
        # Pinned rather than left to SQLAlchemy's default driver, which varies by version.
        url = url.set(drivername="postgresql+psycopg")
    elif backend == "sqlite" and not url.database:
        raise ValueError(
            f"{database_url!r} names no SQLite file: an in-memory event log would vanish; "
            "use sqlite:////absolute/path/forge.db"
        )
    elif backend not in ("sqlite", "postgresql"):
        raise ValueError(
            f"{database_url!r}: unsupported database {backend!r}; use sqlite:///PATH "
            "or postgresql+psycopg://USER@HOST/DB"
        )
    return url


def backend_of(url: URL) -> Backend:
    return "postgresql" if url.get_backend_name() == "postgresql" else "sqlite"


def create_store_engine(database_url: str) -> Engine:
    """An engine configured for the event store's locking on either backend."""
    url = normalize_url(database_url)
    if backend_of(url) == "postgresql":
        # No server-side prepared statements (psycopg prepares a query run 5 times on one
        # connection): behind a transaction-mode pooler such as PgBouncer the next transaction
        # may run on another server connection, or share this one with another client, and a
        # prepared statement would be missing or collide (docs/isolation.md).
        return create_engine(url, pool_pre_ping=True, connect_args={"prepare_threshold": None})
    assert url.database is not None  # normalize_url rejected the in-memory form
    Path(url.database).expanduser().parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(url)
    event.listen(engine, "connect", _sqlite_connect)
    event.listen(engine, "begin", _sqlite_begin)
    return engine


def _sqlite_connect(dbapi_connection: Any, _record: Any) -> None:
    # pysqlite's own BEGIN handling is off so _sqlite_begin decides DEFERRED vs IMMEDIATE.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    try:
        cursor.execute("PRAGMA journal_mode=WAL")  # readers never block the single writer
        # WAL + NORMAL: no fsync per commit; a process crash (even SIGKILL) loses nothing and
        # nothing corrupts; only an OS crash or power loss can drop the last commits. This is
        # the embedded default's trade-off; production runs on PostgreSQL.
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
    finally:
        cursor.close()


def _sqlite_begin(conn: Connection) -> None:
    # IMMEDIATE takes the write lock before reading heads, so check-then-insert cannot race;
    # a DEFERRED transaction would fail with SQLITE_BUSY on upgrade instead of waiting.
    if conn.get_execution_options().get(WRITE_OPTION):
        conn.exec_driver_sql("BEGIN IMMEDIATE")
    else:
        conn.exec_driver_sql("BEGIN")


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """One write transaction; on SQLite it takes the write lock up front (BEGIN IMMEDIATE)."""
    with engine.connect() as conn:
        conn.execution_options(**{WRITE_OPTION: True})
        with conn.begin():
            yield conn


def lock_key(conn: Connection, key: str) -> None:
    """Serialize the writers of `key` until the transaction ends.

    PostgreSQL takes a transaction-scoped advisory lock on the key's hash; SQLite's BEGIN
    IMMEDIATE already serializes every writer.
    """
    if conn.dialect.name == "postgresql":
        lock_id = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "big", signed=True)
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": lock_id})
