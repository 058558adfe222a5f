"""Run admission under a tenant's quotas (issue 20 §3): one row per run admitted.

`admit` is one write transaction per tenant (PostgreSQL: a transaction-scoped advisory lock on
the tenant's quota; SQLite: the write lock up front), so two submissions racing for the last
slot or the last tokens are serialized and exactly one wins. A run's token ceiling is what the
tenant has left for the UTC day when it starts (never more than it asked for), so a run cannot
cross the daily quota mid-way; the day counts what ended runs used and the ceilings of live
ones. A run ends when its terminal event is appended (`end_on_terminal_events`, called by the
event store in the same transaction), or when reconciliation finds its workflow closed
(workers/services/quotas.py: a terminated run writes no event); it then counts the tokens its model
calls used, as its budget counted them.

Only tenants with a quota are admitted: a tenant without one writes no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine, delete, func, insert, select, update
from sqlalchemy.engine import Connection

from activities import telemetry_metrics
from activities.store.engine import lock_key
from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import events, run_admissions, tenant_settings
from activities.store.tenancy import scoped
from compiler.budget import LedgerError, usage_from_events
from schemas.budget import MODEL_CALLED
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import RUN_CANCELLED, RUN_COMPLETED, RUN_FAILED
from schemas.events import EventDraft
from schemas.quota import QuotaUsage
from schemas.run import RunInput
from schemas.spelling import Named, Spelled, literal

__all__ = [
    "AdmissionStore",
    "QuotaExceeded",
    "end_on_terminal_events",
    "next_reset",
    "open_admissions",
]

_A = run_admissions.c
_TERMINAL = frozenset({RUN_COMPLETED, RUN_FAILED, RUN_CANCELLED})
CONCURRENCY_RETRY_S = 30  # a run slot frees when a run ends: there is no fixed time to name


class QuotaExceeded(ForgeError, RuntimeError):
    """The tenant is at a quota; `retry_after_s` says when to try again."""

    code = ErrorCode.QUOTA_EXCEEDED
    message_is_complete = True

    def __init__(
        self, message: str, *, retry_after_s: int, hint: str, quota: str = "tokens_per_day"
    ) -> None:
        super().__init__(message, hint=hint)
        self.retry_after_s = retry_after_s
        self.quota = quota  # which one refused: a bounded metric label

    def counted(self, tenant_id: str) -> QuotaExceeded:
        """This refusal, counted in forge.quota.refusals (where a refusal is final)."""
        telemetry_metrics.quota_refused(tenant_id, self.quota)
        return self


@dataclass(frozen=True)
class Limits:
    max_concurrent_runs: int | None
    max_tokens_per_day: int | None

    @property
    def any(self) -> bool:
        return self.max_concurrent_runs is not None or self.max_tokens_per_day is not None


def next_reset(now: datetime) -> datetime:
    """The next 00:00 UTC after `now`: when the day's token count starts again."""
    day = now.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    return day + timedelta(days=1)


class AdmissionStore:
    """Every tenant's admitted runs."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> AdmissionStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def limits(self, tenant_id: str) -> Limits:
        """The tenant's quotas (both None: no quota, nothing to admit)."""
        with scoped(self._engine, tenant_id) as conn:
            return _limits(conn, tenant_id)

    def admit(
        self, tenant_id: str, run_id: str, requested_tokens: int | None, now: datetime
    ) -> int | None:
        """Admit `run_id`, atomically; returns its token ceiling (None: no token cap).

        A tenant without a quota writes nothing (and gets None).

        Raises:
            QuotaExceeded: the tenant runs as many runs as it may, or has no tokens left today;
                nothing was written.
        """
        with scoped(self._engine, tenant_id, write=True) as conn:
            lock_key(conn, f"quota\x00{tenant_id}")
            limits = _limits(conn, tenant_id)
            if not limits.any:
                return None
            try:
                left = _headroom(conn, tenant_id, limits, now)
            except QuotaExceeded as refused:
                raise refused.counted(tenant_id) from None
            ceiling = requested_tokens
            if left is not None:
                ceiling = left if requested_tokens is None else min(requested_tokens, left)
            conn.execute(
                insert(run_admissions).values(
                    tenant_id=tenant_id,
                    run_id=run_id,
                    admitted_at=now,
                    day=f"{now.astimezone(UTC):%Y-%m-%d}",
                    token_ceiling=ceiling if limits.max_tokens_per_day is not None else None,
                )
            )
        return ceiling

    def admit_run(self, run: RunInput, now: datetime) -> RunInput:
        """`run` admitted (see admit), its tokens held to its ceiling by `quota_tokens`.

        The ceiling asked for is the run's own max_tokens; a run that has none (its profile's
        applies, unknown before it compiles) is given all the day has left.
        """
        requested = run.budget.max_tokens if run.budget else None
        ceiling = self.admit(run.scope.tenant, run.run_id, requested, now)
        return run if ceiling is None else run.model_copy(update={"quota_tokens": ceiling})

    def check(self, tenant_id: str, now: datetime) -> None:
        """Refuse now, writing nothing, if the tenant could not be admitted a run.

        A pre-check for callers with work to do before admitting (the API copies a request's
        S3 inputs): a refused request then leaves nothing behind. `admit` decides for good.

        Raises:
            QuotaExceeded: as `admit` would.
        """
        with scoped(self._engine, tenant_id) as conn:
            limits = _limits(conn, tenant_id)
            if limits.any:
                _headroom(conn, tenant_id, limits, now)

    def release(self, tenant_id: str, run_id: str) -> None:
        """Forget an admission whose run never started (its start failed)."""
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(
                delete(run_admissions).where(_A.tenant_id == tenant_id, _A.run_id == run_id)
            )

    def live(self, tenant_id: str) -> list[str]:
        """The tenant's admitted runs that have not ended, oldest first."""
        with scoped(self._engine, tenant_id) as conn:
            return _live(conn, tenant_id)

    def live_since(self, tenant_id: str) -> list[tuple[str, datetime]]:
        """The tenant's admitted runs that have not ended, with when each was admitted."""
        with scoped(self._engine, tenant_id) as conn:
            rows = conn.execute(
                select(_A.run_id, _A.admitted_at)
                .where(_A.tenant_id == tenant_id, _A.ended_at.is_(None))
                .order_by(_A.admitted_at, _A.run_id)
            )
            return [(r.run_id, utc(r.admitted_at)) for r in rows]

    def end(self, tenant_id: str, run_id: str, now: datetime) -> None:
        """Mark a run ended (its workflow closed without a terminal event, e.g. terminated)."""
        with scoped(self._engine, tenant_id, write=True) as conn:
            _end(conn, tenant_id, run_id, now)

    def extend(self, tenant_id: str, run_id: str, tokens: int, now: datetime) -> bool:
        """Raise a live admitted run's ceiling by `tokens` from the day's quota.

        Returns False when the run has no token ceiling (not admitted, or no daily quota).

        Raises:
            QuotaExceeded: the day has fewer than `tokens` left; nothing changed.
        """
        with scoped(self._engine, tenant_id, write=True) as conn:
            lock_key(conn, f"quota\x00{tenant_id}")
            row = conn.execute(
                select(_A.token_ceiling).where(
                    _A.tenant_id == tenant_id, _A.run_id == run_id, _A.ended_at.is_(None)
                )
            ).first()
            limits = _limits(conn, tenant_id)
            if row is None or row.token_ceiling is None or limits.max_tokens_per_day is None:
                return False
            left = limits.max_tokens_per_day - _tokens_today(conn, tenant_id, now)
            if tokens > left:
                refused = _no_tokens(
                    f"run {run_id} cannot get {tokens:,} more tokens: tenant {tenant_id!r} has "
                    f"{max(left, 0):,} of its {limits.max_tokens_per_day:,} tokens left today "
                    "(UTC), until",
                    now,
                    f"ask for at most {max(left, 0):,}, or raise the quota: forge tenants "
                    f"update {tenant_id} --max-tokens-per-day N",
                )
                raise refused.counted(tenant_id)
            conn.execute(
                update(run_admissions)
                .where(_A.tenant_id == tenant_id, _A.run_id == run_id)
                .values(token_ceiling=row.token_ceiling + tokens)
            )
        return True

    def usage(self, tenant_id: str, now: datetime) -> QuotaUsage:
        """The tenant's limits and what it uses of them now."""
        with scoped(self._engine, tenant_id) as conn:
            limits = _limits(conn, tenant_id)
            today = _tokens_today(conn, tenant_id, now)
            live = _live(conn, tenant_id)
        cap = limits.max_tokens_per_day
        return QuotaUsage(
            tenant_id=tenant_id,
            max_concurrent_runs=limits.max_concurrent_runs,
            max_tokens_per_day=cap,
            live_runs=live,
            tokens_today=today,
            tokens_left=None if cap is None else max(cap - today, 0),
            resets_at=next_reset(now),
        )


def end_on_terminal_events(conn: Connection, drafts: Sequence[EventDraft]) -> None:
    """End the admissions of runs whose terminal event is in `drafts` (same transaction).

    Called by the event store as it appends (see `_end` for the tokens counted).
    """
    for draft in drafts:
        if draft.type in _TERMINAL and draft.run_id:
            _end(conn, draft.scope.tenant, draft.run_id, draft.timestamp)


def open_admissions(database_url: str) -> AdmissionStore:
    """The run admissions in the database at `database_url` (SQLite migrated on open)."""
    return AdmissionStore(open_migrated(database_url))


def _no_tokens(message: str, now: datetime, hint: str) -> QuotaExceeded:
    """A refusal for want of tokens today: `message` ends with the reset time, Retry-After too."""
    reset = next_reset(now)
    return QuotaExceeded(
        f"{message} {reset:%Y-%m-%dT%H:%M:%SZ}",
        retry_after_s=max(1, int((reset - now).total_seconds()) + 1),
        hint=hint,
    )


def _headroom(conn: Connection, tenant_id: str, limits: Limits, now: datetime) -> int | None:
    """The tokens the tenant has left today (None: no daily quota), if it may start a run.

    Raises:
        QuotaExceeded: it runs as many runs as it may, or has no tokens left today.
    """
    live = _live(conn, tenant_id)
    cap = limits.max_concurrent_runs
    if cap is not None and len(live) >= cap:
        why = (
            f"tenant {tenant_id!r} runs {len(live)} of its {cap} concurrent runs; "
            "one must end before another starts"
        )
        see = Named("action", f"forge tenants show {tenant_id}", "GET /v1/quota")
        raise_ = Named(
            "action",
            f"forge tenants update {tenant_id} --max-runs N",
            "the operator raises its max_concurrent_runs",
        )
        raise QuotaExceeded(
            why, retry_after_s=CONCURRENCY_RETRY_S, hint="", quota="concurrent_runs"
        ).spell(
            Spelled(literal(why)),
            Spelled(
                "retry when one of its runs ends ({0}), or raise the quota: {1}", (see, raise_)
            ),
        )
    if limits.max_tokens_per_day is None:
        return None
    left = limits.max_tokens_per_day - _tokens_today(conn, tenant_id, now)
    if left <= 0:
        cap = limits.max_tokens_per_day
        raise _no_tokens(
            f"tenant {tenant_id!r} has used {cap:,} of its {cap:,} model tokens "
            "today (UTC); the quota resets at",
            now,
            f"retry after the reset, or raise the quota: forge tenants update "
            f"{tenant_id} --max-tokens-per-day N",
        )
    return left


def _limits(conn: Connection, tenant_id: str) -> Limits:
    row = conn.execute(
        select(tenant_settings.c.max_concurrent_runs, tenant_settings.c.max_tokens_per_day).where(
            tenant_settings.c.tenant_id == tenant_id
        )
    ).first()
    if row is None:
        return Limits(None, None)
    return Limits(row.max_concurrent_runs, row.max_tokens_per_day)


def _live(conn: Connection, tenant_id: str) -> list[str]:
    query = (
        select(_A.run_id)
        .where(_A.tenant_id == tenant_id, _A.ended_at.is_(None))
        .order_by(_A.admitted_at, _A.run_id)
    )
    return list(conn.execute(query).scalars())


def _tokens_today(conn: Connection, tenant_id: str, now: datetime) -> int:
    counted = func.coalesce(func.sum(func.coalesce(_A.tokens_used, _A.token_ceiling, 0)), 0)
    day = f"{now.astimezone(UTC):%Y-%m-%d}"
    return int(
        conn.execute(select(counted).where(_A.tenant_id == tenant_id, _A.day == day)).scalar_one()
    )


def _end(conn: Connection, tenant_id: str, run_id: str, now: datetime) -> None:
    """Mark the run's admission ended with the tokens it used.

    Used is what its budget counted: every billed token of its model.called.v1 events (the
    ledger compiler/budget.py sums; the terminal event's cost line is not usage). A ledger that
    cannot be read leaves tokens_used empty, so the run counts its whole ceiling against the day.
    """
    where = (_A.tenant_id == tenant_id, _A.run_id == run_id, _A.ended_at.is_(None))
    if conn.execute(select(_A.run_id).where(*where)).first() is None:
        return  # not admitted under a quota, or already ended
    c = events.c
    calls = conn.execute(
        select(c.event_id, c.type, c.payload).where(
            c.tenant_id == tenant_id, c.run_id == run_id, c.type == MODEL_CALLED
        )
    )
    try:
        used: int | None = usage_from_events(calls).tokens
    except LedgerError:
        used = None
    conn.execute(update(run_admissions).where(*where).values(ended_at=now, tokens_used=used))
