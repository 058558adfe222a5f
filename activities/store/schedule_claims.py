"""Schedule claims: at most one Forge run per scheduled time of a tenant's schedule.

A Temporal Schedule may start the workflow of one scheduled time more than once (a repeated
backfill, a catch-up after an outage); each start claims (tenant, schedule, scheduled time)
here before it starts a run. The first claim holds the time; every later one is refused with
the holder's run id and counted. A claim by the run already holding the time is that claim
again, so an activity retry changes nothing. A tenant only ever sees and collides with its own
claims.

Re-running a period is deliberate: `forge schedule backfill --force` first records a force over
its range (`allow_rerun`). A claim of a time inside the newest force covering it that the time's
holder did not run under takes the time over as its next attempt and records that force, so one
forced backfill re-runs each of its times once, and repeating the plain backfill afterwards
still runs none.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any
from uuid import uuid4

from sqlalchemy import ColumnElement, Engine, and_, delete, func, insert, select, update

from activities.store.engine import lock_key
from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import schedule_claims, schedule_forces
from activities.store.tenancy import scoped
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.schedule_claims import Claim, ClaimCounts, ClaimRecord
from schemas.scope import Scope

__all__ = [
    "ScheduleClaims",
    "open_schedule_claims",
    "scheduled_time",
]

_MAX_ID = 200  # the columns' bound (activities/store/tables.py)
_T = schedule_claims.c
_F = schedule_forces.c


class ScheduleClaims:
    """Claims of scheduled times per tenant: claim, history, counts, forget."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    @property
    def engine(self) -> Engine:
        return self._engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> ScheduleClaims:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def claim(self, scope: Scope, schedule: str, scheduled_at: datetime, run_id: str) -> Claim:
        """Claim `scheduled_at` of the tenant's `schedule` for `run_id`.

        The first claim of a time holds it (`claimed=True`, attempt 1). A later claim by another
        run is refused (`claimed=False`, the holder's run id) and counted in `refused`, unless a
        force covering the time was recorded that the holder did not run under: then `run_id`
        holds the next attempt. A claim by the holder itself returns its claim unchanged.

        Raises:
            ForgeError: SCHEDULE_INVALID, `scheduled_at` has no time zone, or `schedule` or
                `run_id` is empty or longer than 200 characters; nothing was recorded.
        """
        at = scheduled_time(scheduled_at)
        _check_id("schedule name", schedule)
        _check_id("run id", run_id)
        tenant = scope.tenant
        this_time = and_(_of(scope, schedule), _T.scheduled_at == at)
        with scoped(self._engine, scope.tenant, write=True) as conn:
            # Serializes the claims of this one time; the primary key backs it up.
            lock_key(conn, f"schedule_claims:{tenant}:{schedule}:{at.isoformat()}")
            force = conn.execute(
                select(_F.force_id)
                .where(_forces_of(scope, schedule), _F.start_at <= at, _F.end_at >= at)
                .order_by(_F.created_at.desc(), _F.force_id.desc())
                .limit(1)
            ).scalar()
            row = conn.execute(select(schedule_claims).where(this_time)).mappings().first()
            now = datetime.now(UTC)
            if row is None:
                conn.execute(
                    insert(schedule_claims).values(
                        tenant_id=tenant,
                        schedule=schedule,
                        scheduled_at=at,
                        run_id=run_id,
                        attempt=1,
                        refused=0,
                        claimed_at=now,
                        forced_by=force,
                    )
                )
                return Claim(claimed=True, run_id=run_id, attempt=1, refused=0)
            held = Claim(
                claimed=row["run_id"] == run_id,
                run_id=row["run_id"],
                attempt=row["attempt"],
                refused=row["refused"],
            )
            if held.claimed:  # the holder again: an activity retry
                return held
            if force is None or row["forced_by"] == force:
                refused = held.refused + 1
                conn.execute(update(schedule_claims).where(this_time).values(refused=refused))
                return held.model_copy(update={"refused": refused})
            attempt = held.attempt + 1
            conn.execute(
                update(schedule_claims)
                .where(this_time)
                .values(run_id=run_id, attempt=attempt, claimed_at=now, forced_by=force)
            )
            return Claim(claimed=True, run_id=run_id, attempt=attempt, refused=held.refused)

    def allow_rerun(self, scope: Scope, schedule: str, start: datetime, end: datetime) -> str:
        """Record a force: each time of `schedule` in [start, end] may run once more.

        Returns the force's id (for `revoke` if the backfill it was for could not start).

        Raises:
            ForgeError: SCHEDULE_INVALID, a naive time, `end` before `start`, or a bad schedule
                name.
        """
        first, last = scheduled_time(start), scheduled_time(end)
        _check_id("schedule name", schedule)
        if last < first:
            raise ForgeError(
                f"force from {first.isoformat()} to {last.isoformat()}: the end is before the "
                "start; give the earlier time first",
                code=ErrorCode.SCHEDULE_INVALID,
            )
        force_id = f"force-{uuid4().hex}"
        with scoped(self._engine, scope.tenant, write=True) as conn:
            conn.execute(
                insert(schedule_forces).values(
                    tenant_id=scope.tenant,
                    schedule=schedule,
                    force_id=force_id,
                    start_at=first,
                    end_at=last,
                    actor=scope.actor.id,
                    created_at=datetime.now(UTC),
                )
            )
        return force_id

    def revoke(self, scope: Scope, schedule: str, force_id: str) -> None:
        """Withdraw a force whose backfill never started (no time has run under it)."""
        with scoped(self._engine, scope.tenant, write=True) as conn:
            conn.execute(
                delete(schedule_forces).where(_forces_of(scope, schedule), _F.force_id == force_id)
            )

    def history(self, scope: Scope, schedule: str, *, limit: int = 20) -> list[ClaimRecord]:
        """The tenant's `schedule`'s claimed times, the latest scheduled time first.

        Raises:
            ForgeError: SCHEDULE_INVALID, `limit` is below 1.
        """
        if limit < 1:
            raise ForgeError(
                f"history limit {limit} is below 1: ask for 1 or more",
                code=ErrorCode.SCHEDULE_INVALID,
            )
        query = (
            select(schedule_claims)
            .where(_of(scope, schedule))
            .order_by(_T.scheduled_at.desc())
            .limit(limit)
        )
        with scoped(self._engine, scope.tenant) as conn:
            rows = list(conn.execute(query).mappings())
        return [_record(row) for row in rows]

    def counts(self, scope: Scope, schedule: str) -> ClaimCounts:
        """How many times the tenant's `schedule` ran, was forced, and was refused as run."""
        query = select(
            func.count(),
            func.coalesce(func.sum(_T.attempt - 1), 0),
            func.coalesce(func.sum(_T.refused), 0),
        ).where(_of(scope, schedule))
        with scoped(self._engine, scope.tenant) as conn:
            times, forced, refused = conn.execute(query).one()
        return ClaimCounts(times=int(times), forced=int(forced), already_ran=int(refused))

    def forget(self, scope: Scope, schedule: str) -> int:
        """Delete the tenant's `schedule`'s claims and forces (it was deleted); claims removed."""
        with scoped(self._engine, scope.tenant, write=True) as conn:
            conn.execute(delete(schedule_forces).where(_forces_of(scope, schedule)))
            return int(conn.execute(delete(schedule_claims).where(_of(scope, schedule))).rowcount)


def scheduled_time(value: datetime) -> datetime:
    """`value` as the UTC instant claims are keyed by.

    Raises:
        ForgeError: SCHEDULE_INVALID, `value` is naive: it would name a different instant on workers
            in different time zones.
    """
    if value.tzinfo is None or value.utcoffset() is None:
        raise ForgeError(
            f"scheduled time {value.isoformat()} has no time zone: pass an aware datetime "
            "(e.g. the Temporal Schedule's scheduled time, or datetime(..., tzinfo=UTC))",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    return value.astimezone(UTC)


def open_schedule_claims(database_url: str) -> ScheduleClaims:
    """The schedule claims in the database at `database_url`, migrated like the event store.

    SQLite is migrated on open; PostgreSQL must already be at the newest schema.

    Raises:
        ValueError: The URL is malformed or names an unsupported backend.
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    return ScheduleClaims(open_migrated(database_url))


def _of(scope: Scope, schedule: str) -> ColumnElement[bool]:
    return and_(_T.tenant_id == scope.tenant, _T.schedule == schedule)


def _forces_of(scope: Scope, schedule: str) -> ColumnElement[bool]:
    return and_(_F.tenant_id == scope.tenant, _F.schedule == schedule)


def _check_id(what: str, value: str) -> None:
    if not value or len(value) > _MAX_ID:
        raise ForgeError(
            f"{what} {value!r} cannot be claimed: give 1 to {_MAX_ID} characters",
            code=ErrorCode.SCHEDULE_INVALID,
        )


def _record(row: Mapping[Any, Any]) -> ClaimRecord:
    return ClaimRecord(
        scheduled_at=utc(row["scheduled_at"]),
        run_id=row["run_id"],
        attempt=row["attempt"],
        refused=row["refused"],
        claimed_at=utc(row["claimed_at"]),
    )
