"""A scheduled run is admitted under its tenant's quotas when its time comes (issue 20 §3):
refused, the time fails naming the quota (and stays claimed); admitted, its token budget is
capped at what the tenant has left for the day."""

from datetime import UTC, datetime, timedelta

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.run import RunResult
from tests.workflows.engine import engine
from tests.workflows.test_schedule_input_locations import ACME, acme_capsule
from tests.workflows.test_schedules import finished, request, results, roots, sales
from workers import schedules


async def test_a_scheduled_run_is_refused_or_capped_by_its_tenants_quota(
    temporal_env, task_queue, tmp_path
):
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await acme_capsule(eng, tmp_path)
        own = tmp_path / "acme"
        sales(own / "sales.csv", "acme")

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
