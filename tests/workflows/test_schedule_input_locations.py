"""A scheduled run reads inputs where its own tenant may, never where the worker or another
tenant may (issue 20 §2): the worker looks the run's tenant's locations up when the time comes."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

from activities.store.capsule_bundle import export_bytes, export_capsule
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.scope import Scope
from tests.workflows.engine import Engine, engine
from tests.workflows.test_capsules import SCOPE
from tests.workflows.test_schedules import capsule, finished, request, results, roots, sales
from workers.services import schedules
from workers.services.capsules import import_version

ACME = Scope.of_tenant("acme")


async def acme_capsule(eng: Engine, tmp: Path) -> None:
    """The schedules tests' `counter` capsule, made by the default tenant, imported by acme."""
    await capsule(eng, tmp)
    exported = export_capsule(eng.services.capsules, eng.services.artifacts, SCOPE, "counter", None)
    import_version(
        eng.services.capsules, eng.services.artifacts, eng.services.events, ACME,
        export_bytes(exported), source="test",
    )  # fmt: skip


async def test_a_scheduled_run_reads_only_its_tenants_locations(temporal_env, task_queue, tmp_path):
    # The deployment's FORGE_INPUT_ROOTS (tmp_path) are the default tenant's, not acme's.
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await acme_capsule(eng, tmp_path)
        own, other = tmp_path / "acme", tmp_path / "globex"
        sales(own / "sales.csv", "acme")
        sales(other / "sales.csv", "globex")
        with open_tenant_settings(eng.settings.database_url) as store:
            store.update("acme", SettingsChange(add_roots=(str(own),)), actor="test")
        at = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
        window = (at - timedelta(minutes=30), at + timedelta(minutes=30))
        for name, source in (("acme-own", own), ("acme-other", other)):
            req = request(name, str(source / "sales.csv"), cron="0 * * * *")
            await schedules.create(eng.client, task_queue, eng.services.capsules, ACME, req)
            await schedules.backfill(eng.client, eng.services.claims, ACME, name, *window)
        [mine] = await results(eng.client, await finished(eng.client, "scheduled-acme-own-", 1))
        [theirs] = await results(eng.client, await finished(eng.client, "scheduled-acme-other-", 1))
        assert not isinstance(mine, str) and mine.status == "completed", mine
        assert isinstance(theirs, str), theirs
        assert "INPUT_LOCATION_REFUSED" in theirs or "outside the input roots" in theirs, theirs
        assert "of tenant 'acme'" in theirs and str(own) in theirs, theirs
        # Granting the location lets the next time read it: settings are read per run.
        with open_tenant_settings(eng.settings.database_url) as store:
            store.update("acme", SettingsChange(add_roots=(str(other),)), actor="test")
        later = (window[0] + timedelta(hours=1), window[1] + timedelta(hours=1))
        await schedules.backfill(eng.client, eng.services.claims, ACME, "acme-other", *later)
        done = await results(eng.client, await finished(eng.client, "scheduled-acme-other-", 2))
        assert any(not isinstance(r, str) and r.status == "completed" for r in done), done
        for name in ("acme-own", "acme-other"):
            await schedules.act(eng.client, eng.services.claims, ACME, name, "delete")
