"""Schedule claims, one contract run against SQLite and a real PostgreSQL 15."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta, timezone

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, select

from activities.store.migrate import head_revision, upgrade
from activities.store.schedule_claims import ScheduleClaims, open_schedule_claims
from activities.store.tables import metadata, schedule_claims
from activities.store.tenancy import scoped
from schemas.error_codes import ErrorCode
from schemas.schedule_claims import Claim, ClaimCounts
from schemas.scope import Scope
from tests.support.errors import raises_code

NIGHTLY = "nightly-billing"
AT = datetime(2026, 11, 26, 2, 0, tzinfo=UTC)


def race(calls: list[Callable[[], Claim]]) -> list[Claim]:
    """Run `calls` in threads released together; every result, or the first error raised."""
    results: list[Claim] = []
    errors: list[BaseException] = []
    start = threading.Barrier(len(calls))

    def run(call: Callable[[], Claim]) -> None:
        try:
            start.wait()
            results.append(call())
        except BaseException as exc:  # collected and re-raised by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(c,)) for c in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return results


class ScheduleClaimsContract:
    """Every backend must pass these; subclasses provide `database_url`."""

    @pytest.fixture
    def claims(self, database_url: str) -> Iterator[ScheduleClaims]:
        with open_schedule_claims(database_url) as claims:
            yield claims

    @pytest.fixture
    def scope(self) -> Scope:
        # Tests share a database per class; a tenant of their own keeps their rows apart.
        return Scope.of_tenant(f"t-{uuid.uuid4().hex[:12]}")

    def rows(self, claims: ScheduleClaims, scope: Scope) -> int:
        with scoped(claims.engine, scope.tenant) as conn:
            mine = schedule_claims.c.tenant_id == scope.tenant
            query = select(func.count()).select_from(schedule_claims).where(mine)
            return int(conn.execute(query).one()[0])

    def test_migrated_schema_matches_tables(self, claims: ScheduleClaims) -> None:
        with claims.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, metadata) == []
            assert context.get_current_revision() == head_revision() == "0011"

    def test_first_claim_holds_the_time(self, claims: ScheduleClaims, scope: Scope) -> None:
        claim = claims.claim(scope, NIGHTLY, AT, "run-1")
        assert claim == Claim(claimed=True, run_id="run-1", attempt=1, refused=0)
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=0, already_ran=0)

    def test_a_later_claim_is_refused_with_the_holder_and_counted(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        claims.claim(scope, NIGHTLY, AT, "run-1")
        again = claims.claim(scope, NIGHTLY, AT, "run-2")
        assert again == Claim(claimed=False, run_id="run-1", attempt=1, refused=1)
        third = claims.claim(scope, NIGHTLY, AT, "run-3")
        assert third == Claim(claimed=False, run_id="run-1", attempt=1, refused=2)
        (record,) = claims.history(scope, NIGHTLY)
        assert (record.run_id, record.attempt, record.refused) == ("run-1", 1, 2)
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=0, already_ran=2)
        # another time of the same schedule is its own claim
        assert claims.claim(scope, NIGHTLY, AT + timedelta(days=1), "run-4").claimed
        assert self.rows(claims, scope) == 2

    def test_the_same_instant_in_another_zone_is_the_same_time(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        claims.claim(scope, NIGHTLY, AT, "run-1")
        paris = AT.astimezone(timezone(timedelta(hours=1)))
        assert claims.claim(scope, NIGHTLY, paris, "run-2").run_id == "run-1"
        (record,) = claims.history(scope, NIGHTLY)
        assert record.scheduled_at == AT and record.scheduled_at.utcoffset() == timedelta(0)

    def test_a_force_reruns_each_time_in_its_range_once(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        claims.claim(scope, NIGHTLY, AT, "run-1")
        claims.claim(scope, NIGHTLY, AT, "run-2")
        hour = timedelta(hours=1)
        claims.allow_rerun(scope, NIGHTLY, AT - hour, AT + hour)
        forced = claims.claim(scope, NIGHTLY, AT, "run-3")
        assert forced == Claim(claimed=True, run_id="run-3", attempt=2, refused=1)
        # the force is spent on this time: the next start of it is refused again
        refused = claims.claim(scope, NIGHTLY, AT, "run-4")
        assert refused == Claim(claimed=False, run_id="run-3", attempt=2, refused=2)
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=1, already_ran=2)
        # a time first run under the force is its first run, and the force is spent on it too
        inside = claims.claim(scope, NIGHTLY, AT + hour / 2, "run-5")
        assert (inside.claimed, inside.attempt) == (True, 1)
        assert not claims.claim(scope, NIGHTLY, AT + hour / 2, "run-6").claimed
        # a time outside the range is not forced
        claims.claim(scope, NIGHTLY, AT + 2 * hour, "run-7")
        assert not claims.claim(scope, NIGHTLY, AT + 2 * hour, "run-8").claimed
        # a second force re-runs once more; a revoked one (its backfill never began) does not
        claims.allow_rerun(scope, NIGHTLY, AT, AT)
        assert claims.claim(scope, NIGHTLY, AT, "run-9").attempt == 3
        withdrawn = claims.allow_rerun(scope, NIGHTLY, AT, AT)
        claims.revoke(scope, NIGHTLY, withdrawn)
        assert claims.claim(scope, NIGHTLY, AT, "run-10").run_id == "run-9"
        # another tenant's force changes nothing here, nor does this one there
        other = Scope.of_tenant(f"t-{uuid.uuid4().hex[:12]}")
        claims.allow_rerun(other, NIGHTLY, AT - hour, AT + hour)
        assert not claims.claim(scope, NIGHTLY, AT, "run-11").claimed
        assert claims.claim(other, NIGHTLY, AT, "theirs").attempt == 1

    def test_a_force_needs_an_ordered_range_with_zones(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        with raises_code(ErrorCode.SCHEDULE_INVALID, match="the end is before the start"):
            claims.allow_rerun(scope, NIGHTLY, AT, AT - timedelta(hours=1))
        with raises_code(ErrorCode.SCHEDULE_INVALID, match="has no time zone"):
            claims.allow_rerun(scope, NIGHTLY, datetime(2026, 11, 26), AT)
        claims.claim(scope, NIGHTLY, AT, "run-1")
        assert not claims.claim(scope, NIGHTLY, AT, "run-2").claimed  # nothing was recorded

    def test_the_holder_claiming_again_changes_nothing(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        first = claims.claim(scope, NIGHTLY, AT, "run-1")
        before = claims.history(scope, NIGHTLY)
        assert claims.claim(scope, NIGHTLY, AT, "run-1") == first
        claims.allow_rerun(scope, NIGHTLY, AT, AT)
        assert claims.claim(scope, NIGHTLY, AT, "run-1") == first  # the holder, even forced
        forced = claims.claim(scope, NIGHTLY, AT, "run-2")
        # a retried forced claim is that attempt, not a third one
        assert claims.claim(scope, NIGHTLY, AT, "run-2") == forced
        assert forced.attempt == 2
        assert before[0].claimed_at <= claims.history(scope, NIGHTLY)[0].claimed_at
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=1, already_ran=0)

    def test_naive_times_and_bad_names_are_refused(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        with raises_code(ErrorCode.SCHEDULE_INVALID, match="has no time zone") as info:
            claims.claim(scope, NIGHTLY, datetime(2026, 11, 26, 2, 0), "run-1")
        assert info.value.code is ErrorCode.SCHEDULE_INVALID
        assert "2026-11-26T02:00:00" in str(info.value)
        for schedule, run_id in (("", "run-1"), ("x" * 201, "run-1"), (NIGHTLY, "")):
            with raises_code(ErrorCode.SCHEDULE_INVALID, match="give 1 to 200 characters"):
                claims.claim(scope, schedule, AT, run_id)
        with raises_code(ErrorCode.SCHEDULE_INVALID, match="below 1"):
            claims.history(scope, NIGHTLY, limit=0)
        assert self.rows(claims, scope) == 0

    def test_racing_claims_of_one_time_make_one_run(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        def claim(run_id: str) -> Callable[[], Claim]:
            return lambda: claims.claim(scope, NIGHTLY, AT, run_id)

        results = race([claim(f"run-{i}") for i in range(8)])
        winners = [r for r in results if r.claimed]
        assert len(winners) == 1
        assert {r.run_id for r in results} == {winners[0].run_id}
        assert sorted(r.refused for r in results if not r.claimed) == list(range(1, 8))
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=0, already_ran=7)

    def test_racing_claims_under_one_force_make_one_rerun(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        claims.claim(scope, NIGHTLY, AT, "run-first")
        claims.allow_rerun(scope, NIGHTLY, AT, AT)

        def claim(run_id: str) -> Callable[[], Claim]:
            return lambda: claims.claim(scope, NIGHTLY, AT, run_id)

        results = race([claim(f"run-{i}") for i in range(6)])
        winners = [r for r in results if r.claimed]
        assert len(winners) == 1 and winners[0].attempt == 2
        assert {r.run_id for r in results} == {winners[0].run_id}
        (record,) = claims.history(scope, NIGHTLY)
        assert (record.attempt, record.run_id) == (2, winners[0].run_id)

    def test_history_is_latest_time_first_and_limited(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        assert claims.history(scope, NIGHTLY) == []
        times = [AT + timedelta(hours=h) for h in (3, 0, 5, 1, 4, 2)]
        for hour, at in enumerate(times):
            claims.claim(scope, NIGHTLY, at, f"run-{hour}")
        claims.claim(scope, "other-schedule", AT + timedelta(hours=9), "run-x")
        history = claims.history(scope, NIGHTLY)
        assert [r.scheduled_at for r in history] == sorted(times, reverse=True)
        assert history[0].run_id == "run-2" and history[-1].run_id == "run-1"
        assert all(r.claimed_at.tzinfo is not None for r in history)
        limited = claims.history(scope, NIGHTLY, limit=2)
        assert [r.scheduled_at for r in limited] == sorted(times, reverse=True)[:2]

    def test_counts(self, claims: ScheduleClaims, scope: Scope) -> None:
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=0, forced=0, already_ran=0)
        for day in range(3):
            claims.claim(scope, NIGHTLY, AT + timedelta(days=day), f"run-{day}")
        claims.claim(scope, NIGHTLY, AT, "again-1")
        claims.claim(scope, NIGHTLY, AT + timedelta(days=1), "again-2")
        claims.claim(scope, NIGHTLY, AT + timedelta(days=1), "again-3")
        claims.allow_rerun(scope, NIGHTLY, AT, AT + timedelta(days=2))
        claims.claim(scope, NIGHTLY, AT, "forced-1")
        claims.claim(scope, NIGHTLY, AT + timedelta(days=2), "forced-2")
        claims.claim(scope, NIGHTLY, AT + timedelta(days=2), "refused-3")
        claims.claim(scope, "other-schedule", AT, "run-x")
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=3, forced=2, already_ran=4)

    def test_forget_deletes_only_that_schedule(self, claims: ScheduleClaims, scope: Scope) -> None:
        assert claims.forget(scope, NIGHTLY) == 0
        for day in range(3):
            claims.claim(scope, NIGHTLY, AT + timedelta(days=day), f"run-{day}")
        claims.claim(scope, "other-schedule", AT, "run-x")
        other = Scope.of_tenant(f"{scope.tenant}-b")
        claims.claim(other, NIGHTLY, AT, "theirs")
        assert claims.forget(scope, NIGHTLY) == 3
        assert claims.history(scope, NIGHTLY) == []
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=0, forced=0, already_ran=0)
        assert len(claims.history(scope, "other-schedule")) == 1
        assert len(claims.history(other, NIGHTLY)) == 1
        # a schedule created again under the forgotten name starts afresh, without old forces
        claims.allow_rerun(scope, NIGHTLY, AT, AT)
        assert claims.forget(scope, NIGHTLY) == 0
        assert claims.claim(scope, NIGHTLY, AT, "run-new").claimed
        assert not claims.claim(scope, NIGHTLY, AT, "run-newer").claimed

    def test_another_tenants_claims_are_invisible_and_never_block(
        self, claims: ScheduleClaims, scope: Scope
    ) -> None:
        claims.claim(scope, NIGHTLY, AT, "ours-1")
        claims.claim(scope, NIGHTLY, AT, "ours-2")
        claims.allow_rerun(scope, NIGHTLY, AT, AT)
        claims.claim(scope, NIGHTLY, AT, "ours-3")
        other = Scope.of_tenant(f"{scope.tenant}-b")
        assert claims.history(other, NIGHTLY) == []
        assert claims.counts(other, NIGHTLY) == ClaimCounts(times=0, forced=0, already_ran=0)
        assert claims.forget(other, NIGHTLY) == 0
        theirs = claims.claim(other, NIGHTLY, AT, "theirs-1")
        assert theirs == Claim(claimed=True, run_id="theirs-1", attempt=1, refused=0)
        refused = claims.claim(other, NIGHTLY, AT, "theirs-2")
        assert refused == Claim(claimed=False, run_id="theirs-1", attempt=1, refused=1)
        # and our side is untouched by theirs
        (ours,) = claims.history(scope, NIGHTLY)
        assert (ours.run_id, ours.attempt, ours.refused) == ("ours-3", 2, 1)
        assert claims.counts(scope, NIGHTLY) == ClaimCounts(times=1, forced=1, already_ran=1)


class TestSqlite(ScheduleClaimsContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('schedules') / 'forge.db'}"


class TestPostgres(ScheduleClaimsContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url


class TestPostgresAppRole(ScheduleClaimsContract):
    """As TestPostgres, connected as the application role row-level security holds."""

    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_app_database_url: str) -> str:
        return postgres_app_database_url
