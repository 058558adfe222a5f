"""Schedules through the real dev server's Temporal Schedules: fires, backfills, the once-only
guard, a missing templated input, pause, unpause and trigger.
"""

import asyncio
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from temporalio.client import Client, WorkflowExecutionStatus

from activities.store.artifacts_s3 import s3_client
from schemas.run import RunResult
from schemas.schedules import ScheduledRunResult
from tests.store.s3 import CREDENTIALS, moto_endpoint, use_test_credentials
from tests.workflows.engine import Engine, engine
from tests.workflows.plans import code_step
from tests.workflows.test_capsules import SCOPE, output, services
from workers.services import run_reads, schedules
from workers.services.capsules import extract_run
from workers.settings import Settings
from workflows.policies import tenant_priority

__all__ = ["moto_endpoint"]  # the S3 server fixture, shared with tests/store

COUNT = """
import csv, json
rows = list(csv.DictReader(open("input/sales.csv")))
json.dump({"rows": len(rows), "first": rows[0]["region"]}, open("output/count.json", "w"))
"""
PLAN = {
    "mission": "Count the sales rows",
    "run_inputs": [{"name": "sales", "path": "input/sales.csv", "kind_key": "table.csv"}],
    "steps": [code_step("count", COUNT, ["output/count.json"], reads=["input/sales.csv"])],
}


def sales(path: Path, region: str, rows: int = 2) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("region,amount\n" + "".join(f"{region},{i}.5\n" for i in range(rows)))
    return path


async def capsule(eng: Engine, tmp: Path) -> None:
    source = await eng.run(PLAN, {"sales": sales(tmp / "seed" / "sales.csv", "seed")})
    assert source.status == "completed", source
    extract_run(services(eng), SCOPE, source.run_id, "counter")


async def finished(client: Client, prefix: str, n: int, timeout_s: float = 120) -> list[str]:
    """Wait until `n` scheduled workflows whose id starts with `prefix` have closed."""
    closed: list[str] = []
    for _ in range(int(timeout_s * 4)):
        closed = []
        async for wf in client.list_workflows('WorkflowType = "ScheduledCapsuleWorkflow"'):
            if wf.id.startswith(prefix) and wf.status != WorkflowExecutionStatus.RUNNING:
                closed.append(f"{wf.id} {wf.run_id}")
        if len(closed) >= n:
            return closed
        await asyncio.sleep(0.25)
    raise AssertionError(f"{len(closed)} of {n} scheduled runs of {prefix} closed")


async def settled(client: Client, prefix: str, timeout_s: float = 120) -> None:
    """Wait until no scheduled workflow whose id starts with `prefix` runs (each waits for its
    capsule run): a test that stops its worker then stops it with no activity in flight."""
    query = 'WorkflowType = "ScheduledCapsuleWorkflow" AND ExecutionStatus = "Running"'
    for _ in range(int(timeout_s * 4)):
        running = [wf.id async for wf in client.list_workflows(query) if wf.id.startswith(prefix)]
        if not running:
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"scheduled runs of {prefix} still running: {running}")


async def results(client: Client, closed: list[str]) -> list[ScheduledRunResult | str]:
    found: list[ScheduledRunResult | str] = []
    for entry in closed:
        workflow_id, run_id = entry.split()
        handle = client.get_workflow_handle(
            workflow_id, run_id=run_id, result_type=ScheduledRunResult
        )
        try:
            found.append(await handle.result())
        except Exception as exc:  # noqa: BLE001 - a failed scheduled run: its message
            found.append(str(getattr(exc, "cause", None) or exc))
    return found


def roots(tmp: Path, task_queue: str) -> Settings:
    """The engine's settings, reading scheduled inputs under the test's directory."""
    return Settings(home=tmp / "home", task_queue=task_queue, input_roots=(tmp,))


def request(name: str, template: str, **fields: object) -> schedules.ScheduleRequest:
    return schedules.ScheduleRequest(
        name=name,
        capsule="counter",
        inputs={"sales": template},
        **fields,  # type: ignore[arg-type]
    )


async def test_a_backfill_runs_each_time_once_and_a_second_backfill_runs_none(
    temporal_env, task_queue, tmp_path
):
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await capsule(eng, tmp_path)
        base = datetime.now(UTC).replace(minute=0, second=0, microsecond=0) - timedelta(days=1)
        hours = [base - timedelta(hours=h) for h in range(12, 0, -1)]
        for at in hours:
            sales(tmp_path / "data" / f"{at:%Y%m%d%H}" / "sales.csv", f"h{at:%H}", rows=3)
        missing = hours[5]
        (tmp_path / "data" / f"{missing:%Y%m%d%H}" / "sales.csv").unlink()
        template = str(tmp_path / "data" / "{scheduled:%Y%m%d%H}" / "sales.csv")
        req = request("hourly", template, every="1h")
        await schedules.create(eng.client, task_queue, eng.services.capsules, SCOPE, req)
        start, end = hours[0] - timedelta(minutes=1), hours[-1] + timedelta(minutes=1)
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "hourly", start, end)
        first = await results(eng.client, await finished(eng.client, "scheduled-hourly-", 12))
        ran = [r for r in first if isinstance(r, ScheduledRunResult)]
        failed = [r for r in first if isinstance(r, str)]
        assert len(ran) == 11 and all(r.status == "completed" for r in ran), first
        # The hour whose file is missing fails that run alone, naming the input.
        assert len(failed) == 1 and "sales" in failed[0], failed
        # describe says why it failed; `forge runs` lists it by its scheduled-… id (§8).
        view = await schedules.describe(
            eng.client, eng.services.capsules, eng.services.claims, SCOPE, "hourly"
        )
        reasons = [r.outcome for r in view.recent if r.outcome.startswith("failed")]
        assert len(reasons) == 1 and "sales" in reasons[0], view.recent
        listed = [wf.id async for wf in eng.client.list_workflows(run_reads.list_query('"Failed"'))]
        assert any(i.startswith("scheduled-hourly") for i in listed), listed
        for r in ran:
            started = eng.services.events.list_events(run_id=r.run_id, type="run.started.v1")
            assert len(started) == 1
            done = await eng.client.get_workflow_handle(r.run_id, result_type=RunResult).result()
            assert output(eng, done, "output/count.json") == {
                "rows": 3,
                "first": f"h{r.scheduled_at:%H}",
            }
        # The same backfill again: every time is claimed, so no second run starts.
        before = len(eng.services.events.list_events(type="run.started.v1", limit=100_000))
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "hourly", start, end)
        again = await results(eng.client, await finished(eng.client, "scheduled-hourly-", 24))
        refused = [r for r in again if isinstance(r, ScheduledRunResult) and r.already_ran]
        assert len(refused) == 12
        after = len(eng.services.events.list_events(type="run.started.v1", limit=100_000))
        assert after == before  # no second run.started, no step executed
        counts = eng.services.claims.counts(SCOPE, "hourly")
        assert (counts.times, counts.already_ran) == (12, 12)
        view = await schedules.describe(
            eng.client, eng.services.capsules, eng.services.claims, SCOPE, "hourly"
        )
        assert view.already_ran == 12 and not view.paused
        assert json.dumps(view.next_version).count("counter@1")
        # --force re-runs the first two hours deliberately, once each: a second run.started each
        two = (start, hours[1] + timedelta(minutes=1))
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "hourly", *two, force=True)
        closed = await finished(eng.client, "scheduled-hourly-", 26)
        forced = [r for r in await results(eng.client, closed) if isinstance(r, ScheduledRunResult)]
        reran = sorted((r for r in forced if r.attempt == 2), key=lambda r: r.scheduled_at)
        assert [(r.scheduled_at, r.status) for r in reran] == [
            (hours[0], "completed"),
            (hours[1], "completed"),
        ]
        for r in reran:
            assert len(eng.services.events.list_events(run_id=r.run_id, type="run.started.v1")) == 1
        total = len(eng.services.events.list_events(type="run.started.v1", limit=100_000))
        assert total == after + 2
        # and the plain backfill once more runs none of them
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "hourly", *two)
        await finished(eng.client, "scheduled-hourly-", 28)
        assert len(eng.services.events.list_events(type="run.started.v1", limit=100_000)) == total
        counts = eng.services.claims.counts(SCOPE, "hourly")
        assert (counts.times, counts.forced, counts.already_ran) == (12, 2, 14)
        await schedules.act(eng.client, eng.services.claims, SCOPE, "hourly", "delete")


async def test_every_fires_and_pause_unpause_trigger(temporal_env, task_queue, tmp_path):
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await capsule(eng, tmp_path)
        template = str(sales(tmp_path / "same" / "sales.csv", "same"))
        handle = await schedules.create(
            eng.client,
            task_queue,
            eng.services.capsules,
            SCOPE,
            request("fast", template, every="2s"),
        )
        fired = await results(eng.client, await finished(eng.client, "scheduled-fast-", 2))
        assert all(isinstance(r, ScheduledRunResult) and r.status == "completed" for r in fired)
        # Each time starts under its tenant's fairness key; its capsule run inherits it.
        assert (await handle.describe()).schedule.action.priority == tenant_priority(SCOPE.tenant)
        run_id = next(r.run_id for r in fired if isinstance(r, ScheduledRunResult))
        child = (await eng.client.get_workflow_handle(run_id).describe()).raw_description
        assert child.workflow_execution_info.priority.fairness_key == SCOPE.tenant
        await handle.pause()
        assert (await handle.describe()).schedule.state.paused
        await handle.trigger()  # a trigger runs even while paused
        await handle.unpause()
        assert not (await handle.describe()).schedule.state.paused
        await handle.delete()
        await settled(eng.client, "scheduled-fast-")  # the worker stops with nothing in flight


async def test_a_berlin_cron_fires_at_nine_local_across_the_spring_change(
    temporal_env, task_queue, tmp_path
):
    """`0 9 * * *` in Europe/Berlin: 08:00 UTC before 2026-03-29, 07:00 UTC after (backfill)."""
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        await capsule(eng, tmp_path)
        days = ["2026-03-27", "2026-03-28", "2026-03-29", "2026-03-30"]
        for day in days:  # only a file named for 09:00 local exists: a wrong hour fails the run
            sales(tmp_path / "berlin" / f"{day}T0900" / "sales.csv", day)
        template = str(tmp_path / "berlin" / "{scheduled:%Y-%m-%dT%H%M}" / "sales.csv")
        req = request("nine", template, cron="0 9 * * *", tz="Europe/Berlin")
        handle = await schedules.create(eng.client, task_queue, eng.services.capsules, SCOPE, req)
        start = datetime(2026, 3, 27, 0, 0, tzinfo=UTC)
        end = datetime(2026, 3, 30, 23, 0, tzinfo=UTC)
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "nine", start, end)
        found = await results(eng.client, await finished(eng.client, "scheduled-nine-", 4))
        ran = sorted(
            (r for r in found if isinstance(r, ScheduledRunResult)), key=lambda r: r.scheduled_at
        )
        assert [f"{r.scheduled_at:%Y-%m-%d %H:%M}" for r in ran] == [
            "2026-03-27 08:00",
            "2026-03-28 08:00",
            "2026-03-29 07:00",
            "2026-03-30 07:00",
        ], found
        assert all(r.status == "completed" for r in ran)
        await handle.delete()


SLOW = COUNT.replace("import csv, json", "import csv, json, time\ntime.sleep(3)")
SLOW_PLAN = {
    **PLAN,
    "steps": [code_step("count", SLOW, ["output/count.json"], reads=["input/sales.csv"])],
}
# Three times started at once by one backfill, each run taking ~3 s: what each policy makes of
# them (Temporal's overlap policies, as `forge schedule create --overlap` documents them).
# (cancel-other and terminate-other keep only the latest of times started together: see below.)
OVERLAP = {
    "skip": {"completed": 1},
    "buffer-one": {"completed": 2},
    "buffer-all": {"completed": 3},
    "allow-all": {"completed": 3},
}


async def test_each_overlap_policy_behaves_as_documented(temporal_env, task_queue, tmp_path):
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        source = await eng.run(SLOW_PLAN, {"sales": sales(tmp_path / "seed" / "sales.csv", "s")})
        extract_run(services(eng), SCOPE, source.run_id, "counter")
        template = str(sales(tmp_path / "same" / "sales.csv", "same"))
        start = datetime(2026, 11, 2, 0, 30, tzinfo=UTC)
        for policy, expected in OVERLAP.items():
            name = f"o-{policy}"
            handle = await schedules.create(
                eng.client,
                task_queue,
                eng.services.capsules,
                SCOPE,
                request(name, template, every="1h"),
            )
            await schedules.backfill(
                eng.client,
                eng.services.claims,
                SCOPE,
                name,
                start,
                start + timedelta(hours=3),
                policy,
            )
            wanted = sum(expected.values())
            closed = await finished(eng.client, f"scheduled-{name}-", wanted)
            await asyncio.sleep(4)  # anything that was going to start has started by now
            statuses: dict[str, int] = {}
            async for wf in eng.client.list_workflows('WorkflowType = "ScheduledCapsuleWorkflow"'):
                if wf.id.startswith(f"scheduled-{name}-") and wf.status is not None:
                    key = wf.status.name.lower()
                    statuses[key] = statuses.get(key, 0) + 1
            assert statuses == expected, (policy, statuses, closed)
            info = (await handle.describe()).info
            started = sum(expected.values())
            assert info.num_actions_skipped_overlap == 3 - started, (policy, info)
            await handle.delete()


async def _running_child(client: Client, prefix: str) -> str:
    """The run id of the first capsule run whose id starts with `prefix`, once it is running."""
    for _ in range(480):
        async for wf in client.list_workflows('WorkflowType = "CompiledRunWorkflow"'):
            if wf.id.startswith(prefix) and wf.status == WorkflowExecutionStatus.RUNNING:
                return wf.id
        await asyncio.sleep(0.25)
    raise AssertionError(f"no capsule run {prefix}* started")


async def test_cancel_other_and_terminate_other_stop_the_running_time_for_the_next(
    temporal_env, task_queue, tmp_path
):
    """A time started while another runs: cancel-other cancels the running one, terminate-other
    terminates its scheduled workflow; either way its capsule run records run.cancelled and the
    new time runs to completion. (Started together in one backfill, Temporal starts only the
    latest of them under these two policies.)"""
    async with engine(
        temporal_env, tmp_path / "home", task_queue, settings=roots(tmp_path, task_queue)
    ) as eng:
        source = await eng.run(SLOW_PLAN, {"sales": sales(tmp_path / "seed" / "sales.csv", "s")})
        extract_run(services(eng), SCOPE, source.run_id, "counter")
        template = str(sales(tmp_path / "same" / "sales.csv", "same"))
        one = datetime(2026, 11, 2, 1, 0, tzinfo=UTC)
        window = timedelta(minutes=30)
        for policy, ended in (("cancel-other", "canceled"), ("terminate-other", "terminated")):
            name = f"o-{policy}"
            req = request(name, template, every="1h", overlap=policy)
            handle = await schedules.create(
                eng.client, task_queue, eng.services.capsules, SCOPE, req
            )
            await schedules.backfill(
                eng.client, eng.services.claims, SCOPE, name, one - window, one + window, policy
            )
            first = await _running_child(eng.client, f"sched-{name}-20261102-010000-")
            # Past its front end (a run cancelled while compiling records no run.cancelled):
            # its step has started when the next time comes.
            for _ in range(480):
                if eng.services.events.list_events(run_id=first, type="step.started.v1"):
                    break
                await asyncio.sleep(0.25)
            two = one + timedelta(hours=1)
            await schedules.backfill(
                eng.client, eng.services.claims, SCOPE, name, two - window, two + window, policy
            )
            closed = await finished(eng.client, f"scheduled-{name}-", 2)
            statuses = {}
            async for wf in eng.client.list_workflows('WorkflowType = "ScheduledCapsuleWorkflow"'):
                if wf.id.startswith(f"scheduled-{name}-") and wf.status is not None:
                    statuses[wf.id.removeprefix(f"scheduled-{name}-")] = wf.status.name.lower()
            assert statuses == {
                "2026-11-02T01:00:00Z": ended,
                "2026-11-02T02:00:00Z": "completed",
            }, (policy, closed)
            stopped = await eng.client.get_workflow_handle(first).describe()
            assert stopped.status == WorkflowExecutionStatus.CANCELED, policy
            cancelled = eng.services.events.list_events(run_id=first, type="run.cancelled.v1")
            assert len(cancelled) == 1, policy
            [second] = [
                r for r in await results(eng.client, closed) if isinstance(r, ScheduledRunResult)
            ]
            assert (second.scheduled_at, second.status) == (two, "completed"), policy
            await handle.delete()


async def test_s3_templates_resolve_per_day_and_pause_on_failure_pauses(
    temporal_env, task_queue, tmp_path, moto_endpoint, monkeypatch
):
    """Daily inputs in a configured bucket, one object per day; the day whose object is missing
    fails its run naming the input, and a schedule made with --pause-on-failure pauses."""
    use_test_credentials(monkeypatch)
    bucket = s3_client(moto_endpoint, **CREDENTIALS)
    bucket.create_bucket(Bucket="acme-sales")
    days = ["2026-11-02", "2026-11-03"]
    for day in days:
        path = sales(tmp_path / "s3" / day / "sales.csv", f"d{day[-2:]}", rows=4)
        bucket.upload_file(str(path), "acme-sales", f"daily/{day}/sales.csv")
    settings = Settings(
        home=tmp_path / "home",
        task_queue=task_queue,
        input_roots=(tmp_path,),
        input_buckets=("acme-sales",),
        s3_endpoint=moto_endpoint,
    )
    async with engine(temporal_env, tmp_path / "home", task_queue, settings=settings) as eng:
        await capsule(eng, tmp_path)
        template = "s3://acme-sales/daily/{scheduled:%Y-%m-%d}/sales.csv"
        req = request("daily-s3", template, cron="0 6 * * *", pause_on_failure=True)
        await schedules.create(eng.client, task_queue, eng.services.capsules, SCOPE, req)
        start, end = datetime(2026, 11, 2, tzinfo=UTC), datetime(2026, 11, 3, 12, tzinfo=UTC)
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "daily-s3", start, end)
        found = await results(eng.client, await finished(eng.client, "scheduled-daily-s3-", 2))
        ran = sorted(
            (r for r in found if isinstance(r, ScheduledRunResult)), key=lambda r: r.scheduled_at
        )
        assert [(f"{r.scheduled_at:%Y-%m-%d}", r.status) for r in ran] == [
            (day, "completed") for day in days
        ]
        for r, day in zip(ran, days, strict=True):
            done = await eng.client.get_workflow_handle(r.run_id, result_type=RunResult).result()
            assert output(eng, done, "output/count.json") == {"rows": 4, "first": f"d{day[-2:]}"}
        view = await schedules.describe(
            eng.client, eng.services.capsules, eng.services.claims, SCOPE, "daily-s3"
        )
        assert not view.paused
        # The next day has no object yet: that run fails, naming the input, and the schedule
        # pauses itself (created with --pause-on-failure) instead of failing every day after.
        late = datetime(2026, 11, 4, tzinfo=UTC), datetime(2026, 11, 4, 12, tzinfo=UTC)
        await schedules.backfill(eng.client, eng.services.claims, SCOPE, "daily-s3", *late)
        found = await results(eng.client, await finished(eng.client, "scheduled-daily-s3-", 3))
        [failure] = [r for r in found if isinstance(r, str)]
        assert "sales" in failure and "2026-11-04" in failure, failure
        for _ in range(120):
            view = await schedules.describe(
                eng.client, eng.services.capsules, eng.services.claims, SCOPE, "daily-s3"
            )
            if view.paused:
                break
            await asyncio.sleep(0.25)
        assert view.paused, view
        await schedules.act(eng.client, eng.services.claims, SCOPE, "daily-s3", "delete")
