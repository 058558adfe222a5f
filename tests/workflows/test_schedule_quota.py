"""A scheduled run is admitted under its tenant's quotas when its time comes (issue 20 §3):
refused, the time fails naming the quota (and stays claimed); admitted, its token budget is
capped at what the tenant has left for the day."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.run import RunResult
from tests.workflows.engine import Engine, engine
from tests.workflows.test_schedule_input_locations import ACME, acme_capsule
from tests.workflows.test_schedules import finished, request, results, roots, sales
from workers.services import quotas, schedules


@asynccontextmanager
async def acme_engine(temporal_env, task_queue, tmp_path) -> AsyncIterator[tuple[Engine, Path]]:
    """An engine with acme's capsule, and acme's sales file in its own input root."""
    home = tmp_path / "home"
    async with engine(temporal_env, home, task_queue, settings=roots(tmp_path, task_queue)) as eng:
        await acme_capsule(eng, tmp_path)
        own = tmp_path / "acme"
        sales(own / "sales.csv", "acme")
        yield eng, own


async def test_a_scheduled_run_is_refused_or_capped_by_its_tenants_quota(
    temporal_env, task_queue, tmp_path
):
    async with acme_engine(temporal_env, task_queue, tmp_path) as (eng, own):

        def quota(**change: object) -> None:
            with open_tenant_settings(eng.settings.database_url) as store:
                store.update("acme", SettingsChange(add_roots=(str(own),), **change), actor="t")

        quota(max_concurrent_runs=0)  # a suspended tenant: no run may start
        req = request("quota-nightly", str(own / "sales.csv"), cron="0 * * * *")
        await schedules.create(eng.client, task_queue, eng.services.capsules, ACME, req)
        at = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
        first = (at - timedelta(minutes=30), at + timedelta(minutes=30))
        await schedules.backfill(eng.client, eng.services.claims, ACME, "quota-nightly", *first)
        prefix = "scheduled-quota-nightly-"
        [refused] = await results(eng.client, await finished(eng.client, prefix, 1))
        assert isinstance(refused, str) and "runs 0 of its 0 concurrent runs" in refused, refused
        with open_tenant_settings(eng.settings.database_url) as store:
            store.update("acme", SettingsChange(max_concurrent_runs=None,
                                                max_tokens_per_day=700), actor="t")  # fmt: skip
        later = (first[0] + timedelta(hours=1), first[1] + timedelta(hours=1))
        await schedules.backfill(eng.client, eng.services.claims, ACME, "quota-nightly", *later)
        found = await results(eng.client, await finished(eng.client, prefix, 2))
        [ran] = [r for r in found if not isinstance(r, str)]
        assert ran.status == "completed", ran
        done = await eng.client.get_workflow_handle(ran.run_id, result_type=RunResult).result()
        assert done.budget.limits.max_tokens == 700
        await schedules.act(eng.client, eng.services.claims, ACME, "quota-nightly", "delete")


async def test_a_scheduled_time_frees_the_slot_of_a_run_that_ended_unseen(
    temporal_env, task_queue, tmp_path
):
    """A run that closed without its terminal event (terminated by hand, or never started)
    holds its admission until someone reconciles with Temporal: the scheduled time does, as
    every CLI and API start does, and is admitted to the freed slot."""
    async with acme_engine(temporal_env, task_queue, tmp_path) as (eng, own):
        with open_tenant_settings(eng.settings.database_url) as store:
            change = SettingsChange(add_roots=(str(own),), max_concurrent_runs=1)
            store.update("acme", change, actor="t")
        lost = "run-20261127-000000-abcdef-t" + "0" * 8  # admitted, never known to Temporal
        stale = datetime.now(UTC) - quotas.START_GRACE - timedelta(minutes=1)
        eng.services.admissions.admit("acme", lost, None, stale)
        assert eng.services.admissions.live("acme") == [lost]  # the one slot is taken
        req = request("freed-nightly", str(own / "sales.csv"), cron="0 * * * *")
        await schedules.create(eng.client, task_queue, eng.services.capsules, ACME, req)
        at = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
        window = (at - timedelta(minutes=30), at + timedelta(minutes=30))
        await schedules.backfill(eng.client, eng.services.claims, ACME, "freed-nightly", *window)
        [ran] = await results(eng.client, await finished(eng.client, "scheduled-freed-nightly-", 1))
        assert not isinstance(ran, str), ran  # admitted, not refused at the quota
        assert ran.status == "completed", ran
        assert lost not in eng.services.admissions.live("acme")
        await schedules.act(eng.client, eng.services.claims, ACME, "freed-nightly", "delete")
