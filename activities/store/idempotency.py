"""Idempotency-Key records: a retried request gets the first answer, and nothing twice.

The first request under a tenant's key claims it (`begin`) before it does anything, with the
sha256 of what it asks (method, path, body); its answer is then stored (`finish`). A request
that fails changes nothing and releases the key (`release`), so a corrected retry may use it.
A claim whose request never finished (its process died) may be taken over after `STALE`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import Engine, delete, insert, select, update
from sqlalchemy.exc import IntegrityError

from activities.store.engine import lock_key
from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import idempotency_records
from activities.store.tenancy import scoped
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "STALE",
    "IdempotencyStore",
    "Stored",
    "open_idempotency_store",
]

STALE = timedelta(minutes=2)
_R = idempotency_records.c


@dataclass(frozen=True)
class Stored:
    """The first answer given under a key."""

    status: int
    body: Any


class IdempotencyStore:
    """Idempotency records per tenant."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def begin(self, tenant: str, key: str, request_sha256: str) -> Stored | None:
        """Claim `key` for this request: None to go ahead, or the first answer to replay.

        Raises:
            ForgeError: IDEMPOTENCY_MISMATCH, the key was used for another request, or
                IDEMPOTENCY_IN_PROGRESS, the first request under the key is still being answered.
        """
        now = datetime.now(UTC)
        where = (_R.tenant_id == tenant, _R.idem_key == key)
        with scoped(self._engine, tenant, write=True) as conn:
            lock_key(conn, f"idempotency\x00{tenant}\x00{key}")
            row = conn.execute(select(idempotency_records).where(*where)).mappings().first()
            if row is None:
                try:
                    conn.execute(
                        insert(idempotency_records).values(
                            tenant_id=tenant,
                            idem_key=key,
                            request_sha256=request_sha256,
                            created_at=now,
                        )
                    )
                except IntegrityError:  # pragma: no cover - serialized by the lock above
                    raise ForgeError(
                        _in_progress(key), code=ErrorCode.IDEMPOTENCY_IN_PROGRESS
                    ) from None
                return None
            if row["request_sha256"] != request_sha256:
                raise ForgeError(
                    f"Idempotency-Key {key!r} was used for a different request (another method, "
                    "path or body); nothing was done",
                    code=ErrorCode.IDEMPOTENCY_MISMATCH,
                )
            if row["status"] is not None:
                return Stored(row["status"], row["response"])
            if now - utc(row["created_at"]) < STALE:
                raise ForgeError(_in_progress(key), code=ErrorCode.IDEMPOTENCY_IN_PROGRESS)
            conn.execute(update(idempotency_records).where(*where).values(created_at=now))
            return None

    def finish(self, tenant: str, key: str, status: int, body: Any) -> None:
        """Store the answer to the request that claimed `key`."""
        with scoped(self._engine, tenant, write=True) as conn:
            conn.execute(
                update(idempotency_records)
                .where(_R.tenant_id == tenant, _R.idem_key == key)
                .values(status=status, response=body)
            )

    def release(self, tenant: str, key: str) -> None:
        """Forget an unanswered claim: its request failed and changed nothing."""
        with scoped(self._engine, tenant, write=True) as conn:
            conn.execute(
                delete(idempotency_records).where(
                    _R.tenant_id == tenant, _R.idem_key == key, _R.status.is_(None)
                )
            )


def _in_progress(key: str) -> str:
    return f"the first request under Idempotency-Key {key!r} is still being answered"


def open_idempotency_store(database_url: str) -> IdempotencyStore:
    """The idempotency records in the database at `database_url` (SQLite migrated on open)."""
    return IdempotencyStore(open_migrated(database_url))
