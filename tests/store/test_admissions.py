"""Run admission under a tenant's quotas (issue 20 §3), on SQLite and on PostgreSQL as the
application role: racing submissions, the daily token cap at start, runs ending."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from activities.store.admissions import AdmissionStore, QuotaExceeded, open_admissions
from activities.store.events import open_event_store
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.events import EventDraft
from schemas.scope import Scope
from tests.store.postgres import postgres_server, two_role_database

__all__ = ["postgres_server"]

NOW = datetime(2026, 11, 27, 15, 30, tzinfo=UTC)
FINALIZED = {"cost": {"input_tokens": 0, "output_tokens": 0, "usd": 0.0}}  # as run__finalize writes


@pytest.fixture(params=["sqlite", "postgres"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'forge.db'}"
        return
    with two_role_database(request.getfixturevalue("postgres_server")) as db:
        yield db.app_url


@pytest.fixture
def store(url: str) -> Iterator[AdmissionStore]:
    with open_admissions(url) as found:
        yield found


def quota(url: str, tenant: str, **change: object) -> None:
    with open_tenant_settings(url) as settings:
        settings.update(tenant, SettingsChange(**change), actor="test")


def record(url: str, run_id: str, stream: str, type_: str, payload: dict) -> None:
    """Append an event of `run_id` (after its run.started.v1 root) as the worker would."""
    scope = Scope.of_tenant("acme")
    root = EventDraft(event_id=f"{run_id}:start", type="run.started.v1", scope=scope,
                      run_id=run_id, timestamp=NOW)  # fmt: skip
    event = EventDraft(event_id=f"{run_id}:{type_}", type=type_, scope=scope, run_id=run_id,
                       caused_by=root.event_id, timestamp=NOW, payload=payload)  # fmt: skip
    with open_event_store(url) as events:
        events.append([root], stream_id=f"run:{run_id}")
        events.append([event], stream_id=stream)


def race(store: AdmissionStore, tenant: str, runs: list[str], tokens: int | None) -> list:
    """Admit every run at once from its own thread; each result is a ceiling or the refusal."""
    results: dict[str, object] = {}
    barrier = threading.Barrier(len(runs))

    def admit(run_id: str) -> None:
        barrier.wait()
        try:
            results[run_id] = store.admit(tenant, run_id, tokens, NOW)
        except QuotaExceeded as exc:
            results[run_id] = exc

    threads = [threading.Thread(target=admit, args=(r,)) for r in runs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return [results[r] for r in runs]


def test_two_submissions_racing_for_the_last_slot_exactly_one_wins(url, store):
    quota(url, "acme", max_concurrent_runs=2)
    store.admit("acme", "run-a1", None, NOW)
    outcomes = race(store, "acme", ["run-a2", "run-a3"], None)
    refused = [o for o in outcomes if isinstance(o, QuotaExceeded)]
    assert len(refused) == 1, outcomes
    assert "tenant 'acme' runs 2 of its 2 concurrent runs" in str(refused[0])
    assert refused[0].retry_after_s > 0
    assert len(store.live("acme")) == 2


def test_many_racing_submissions_never_exceed_the_cap(url, store):
    quota(url, "acme", max_concurrent_runs=3)
    outcomes = race(store, "acme", [f"run-{i}" for i in range(8)], None)
    assert sum(not isinstance(o, QuotaExceeded) for o in outcomes) == 3
    assert len(store.live("acme")) == 3
    assert store.live("globex") == []  # another tenant's quota is its own


def test_token_ceilings_never_sum_past_the_daily_cap(url, store):
    quota(url, "acme", max_tokens_per_day=10_000)
    outcomes = race(store, "acme", [f"run-{i}" for i in range(6)], 3_000)
    granted = [o for o in outcomes if isinstance(o, int)]
    assert sum(granted) == 10_000 and sorted(granted) == [1_000, 3_000, 3_000, 3_000]
    refused = [o for o in outcomes if isinstance(o, QuotaExceeded)]
    assert len(refused) == 2
    assert "the quota resets at 2026-11-28T00:00:00Z" in str(refused[0])
    assert refused[0].retry_after_s == int((datetime(2026, 11, 28, tzinfo=UTC) - NOW).seconds) + 1
    usage = store.usage("acme", NOW)
    assert (usage.tokens_today, usage.tokens_left) == (10_000, 0)


def test_a_run_without_a_budget_gets_what_is_left_and_the_next_day_starts_again(url, store):
    quota(url, "acme", max_tokens_per_day=5_000)
    assert store.admit("acme", "run-1", None, NOW) == 5_000
    with pytest.raises(QuotaExceeded):
        store.admit("acme", "run-2", 100, NOW)
    assert store.admit("acme", "run-3", 100, NOW + timedelta(days=1)) == 100


def test_an_ended_run_frees_its_slot_and_returns_what_it_did_not_use(url, store):
    quota(url, "acme", max_concurrent_runs=1, max_tokens_per_day=10_000)
    assert store.admit("acme", "run-1", 8_000, NOW) == 8_000
    with pytest.raises(QuotaExceeded, match="1 of its 1 concurrent runs"):
        store.admit("acme", "run-2", 1_000, NOW)
    call = {"model": "m", "input_tokens": 1_500, "output_tokens": 500, "cost_usd": 0.01}
    record(url, "run-1", "step:run-1:a", "model.called.v1", call)
    record(url, "run-1", "run:run-1", "run.completed.v1", FINALIZED)  # its terminal event ends it
    assert store.live("acme") == []
    assert store.usage("acme", NOW).tokens_today == 2_000
    assert store.admit("acme", "run-2", None, NOW) == 8_000


def test_an_ended_run_counts_every_billed_token_of_its_model_calls(url, store):
    """The day counts what the run's budget counted (cache tokens too), not the terminal
    event's cost line, which run__finalize writes as zero; an unreadable ledger counts the
    run's whole ceiling."""
    quota(url, "acme", max_tokens_per_day=100_000)
    store.admit("acme", "run-1", 10_000, NOW)
    call = {"model": "m", "input_tokens": 1_000, "output_tokens": 200, "cache_read_tokens": 300,
            "cache_creation_tokens": 500, "cost_usd": 0.01}  # fmt: skip
    record(url, "run-1", "step:run-1:a", "model.called.v1", call)
    record(url, "run-1", "run:run-1", "run.failed.v1", FINALIZED)
    assert store.usage("acme", NOW).tokens_today == 2_000
    store.admit("acme", "run-2", 10_000, NOW)
    record(url, "run-2", "step:run-2:a", "model.called.v1", {"model": "m"})  # no token counts
    store.end("acme", "run-2", NOW)
    assert store.usage("acme", NOW).tokens_today == 12_000


def test_a_terminated_run_is_ended_with_the_tokens_its_model_calls_used(url, store):
    quota(url, "acme", max_concurrent_runs=1, max_tokens_per_day=10_000)
    store.admit("acme", "run-1", 6_000, NOW)
    call = {"model": "m", "input_tokens": 700, "output_tokens": 300, "cost_usd": 0.01}
    record(url, "run-1", "step:run-1:a", "model.called.v1", call)
    store.end("acme", "run-1", NOW)
    assert store.usage("acme", NOW).tokens_today == 1_000
    assert store.admit("acme", "run-2", None, NOW) == 9_000


def test_extending_takes_from_the_day_or_is_refused(url, store):
    quota(url, "acme", max_tokens_per_day=10_000)
    store.admit("acme", "run-1", 4_000, NOW)
    assert store.extend("acme", "run-1", 5_000, NOW) is True
    with pytest.raises(QuotaExceeded, match="has 1,000 of its 10,000 tokens left today"):
        store.extend("acme", "run-1", 2_000, NOW)
    assert store.usage("acme", NOW).tokens_today == 9_000
    assert store.extend("acme", "run-unknown", 10, NOW) is False


def test_the_precheck_refuses_as_admit_would_and_writes_nothing(url, store):
    store.check("acme", NOW)  # no quota: nothing to refuse
    quota(url, "acme", max_concurrent_runs=1, max_tokens_per_day=1_000)
    store.check("acme", NOW)
    assert store.live("acme") == []  # a check admits nothing
    store.admit("acme", "run-1", 400, NOW)
    with pytest.raises(QuotaExceeded, match="runs 1 of its 1 concurrent runs"):
        store.check("acme", NOW)
    quota(url, "acme", max_concurrent_runs=2)
    store.admit("acme", "run-2", None, NOW)  # takes the 600 left
    quota(url, "acme", max_concurrent_runs=3)
    with pytest.raises(QuotaExceeded, match="model tokens today"):
        store.check("acme", NOW)
    assert store.live("acme") == ["run-1", "run-2"]


def test_a_tenant_without_a_quota_is_admitted_without_a_row(url, store):
    assert not store.limits("acme").any
    assert store.usage("acme", NOW).live_runs == []


def test_the_quota_holds_max_tokens_and_keeps_the_cost_cap():
    from schemas.budget import BudgetLimits

    own = BudgetLimits(max_tokens=5_000, max_cost_usd=2.0)
    assert own.capped(1_000) == BudgetLimits(max_tokens=1_000, max_cost_usd=2.0)
    assert own.capped(9_000) == own and own.capped(None) == own
    assert BudgetLimits(max_cost_usd=1.0).capped(700) == BudgetLimits(
        max_tokens=700, max_cost_usd=1.0
    )
