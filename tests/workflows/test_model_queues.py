"""A model step goes to its provider's task queue: a worker without that model never takes it.

Before model queues, a standing `forge worker` without a model took the evaluate step of a run
whose other worker had one, and failed it with EXECUTOR_UNAVAILABLE. Now the step waits on
`QUEUE@anthropic` until a worker that serves the binding polls it.
"""

import asyncio
import concurrent.futures
import json
from typing import Any

import pytest
from temporalio.api.enums.v1 import PendingActivityState
from temporalio.client import WorkflowFailureError, WorkflowHandle
from temporalio.exceptions import ApplicationError

from activities.compile.typelib import load_library, load_profiles
from activities.store.events import EventStore
from compiler.plan.context import CompileContext
from schemas import names
from schemas.scope import Scope
from tests.workflows.engine import engine, forge_client
from tests.workflows.model_env import executor, model_engine, run_python, text, verdict
from tests.workflows.test_evaluator_runs import RUBRIC, report_plan
from tests.workflows.test_model_runs import OBJECTIVE, ONE_STEP, SALES, TOTALS_CODE
from tests.workflows.test_model_runs import RUBRIC as PLAN_RUBRIC
from workers.process.worker import Services, build_worker, known_providers, worker_plan
from workers.services import queues
from workers.settings import Settings


async def pending(handle: WorkflowHandle, events: EventStore, activity: str) -> Any:
    """The run's pending activity `activity` (an id, or a type), once the workflow scheduled it."""
    for _ in range(600):
        described = await handle.describe()
        for one in described.raw_description.pending_activities:
            if activity in (one.activity_id, one.activity_type.name):
                return one
        assert not [e for e in events.list_events(run_id=handle.id) if e.type == "run.failed.v1"]
        await asyncio.sleep(0.1)
    raise AssertionError(f"{activity} was never scheduled")


async def still_waiting(handle: WorkflowHandle, events: EventStore, activity: str) -> None:
    """Scheduled, and not taken by the model-less worker polling the run's queue."""
    first = await pending(handle, events, activity)
    await asyncio.sleep(2)  # ample for the poller of the run's queue, were it to take it
    then = await pending(handle, events, activity)
    scheduled = PendingActivityState.PENDING_ACTIVITY_STATE_SCHEDULED
    assert first.state == then.state == scheduled and then.attempt == 1


async def test_a_worker_without_a_model_leaves_a_model_step_to_one_with_it(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "h"
    script = [{"when": {"consumer": "evaluator"}, "response": text(verdict([RUBRIC]))}]
    async with engine(temporal_env, home, task_queue) as plain:
        assert plain.settings.anthropic_api_key is None and plain.settings.model_script is None
        handle = await plain.start(report_plan(), model_wait_s=600)
        # The code step ran on the model-less worker; the evaluate step waits on the
        # provider's queue, which that worker does not poll.
        await still_waiting(handle, plain.services.events, "judge")
        log = plain.services.events.list_events(run_id=handle.id)
        assert [e for e in log if e.type == "step.completed.v1"]
        assert not [e for e in log if e.payload.get("step_key") == "judge"]
        assert not [e for e in log if e.type == "step.failed.v1"]
        # A worker with the evaluator's model joins (same stores, same task queue): it serves.
        async with model_engine(temporal_env, home, task_queue, script) as (_, server):
            result = await handle.result()
            [request] = server.requests
    assert result.status == "completed"
    assert request["model"] == "claude-sonnet-4-6"
    outputs = {r.path: r for r in result.outputs}
    written = json.loads(
        plain.services.artifacts.read_bytes(
            Scope.default(), outputs["output/judge.verdict.json"].sha256, 1 << 20
        )
    )
    assert written["verdict"] == "pass"


async def test_a_worker_without_a_model_leaves_the_planner_call_to_one_with_it(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "h"
    script = [
        {"when": {"consumer": "planner"}, "response": text(json.dumps(ONE_STEP), thinking=True)},
        executor("totals", run_python(TOTALS_CODE)),
        {"when": {"consumer": "evaluator"}, "response": text(verdict([PLAN_RUBRIC]))},
    ]
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with engine(temporal_env, home, task_queue) as plain:
        ref = plain.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        ctx = CompileContext(
            library=load_library(),
            profiles=load_profiles(home=home)[0],
            profile_ref=None,
        )
        handle = await plain.start_objective(
            OBJECTIVE,
            inputs={"sales": ref},
            planner_provider=queues.planner_provider_of(ctx),
            model_wait_s=600,
        )
        await still_waiting(handle, plain.services.events, "compile__plan")
        async with model_engine(temporal_env, home, task_queue, script) as (_, server):
            result = await handle.result()
            consumers = [h.get("x-forge-consumer") for h in server.headers]
    assert result.status == "completed" and list(result.steps) == ["totals"]
    assert consumers[0] == "planner"


async def test_model_work_no_worker_serves_fails_after_its_wait(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "h", task_queue) as plain:
        result = await plain.run(report_plan(), model_wait_s=1)
        handle = await plain.start_objective(
            OBJECTIVE, planner_provider="anthropic", model_wait_s=1
        )
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    judge = result.steps["judge"]
    assert result.status == "failed" and judge.error is not None
    assert judge.error.failure_class == "EXECUTOR_UNAVAILABLE"
    assert judge.error.message.startswith("no worker serving anthropic models took step judge")
    assert judge.attempts <= 1 and result.steps["draft"].status == "done"
    planner = info.value.cause
    assert isinstance(planner, ApplicationError) and planner.type == "PLANNER_UNAVAILABLE"
    assert "no worker serving anthropic models took the planner call within 1 s" in str(planner)


async def test_each_model_queue_worker_has_threads_for_all_it_accepts(
    temporal_env, task_queue, tmp_path
):
    """An accepted activity never waits for a thread (and misses its heartbeats)."""
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": []}))
    settings = Settings(home=tmp_path / "h", task_queue=task_queue, model_script=script)
    client = await forge_client(temporal_env)
    slots = settings.worker_activity_slots
    with concurrent.futures.ThreadPoolExecutor(max_workers=slots) as pool:
        group = build_worker(client, settings, Services.from_settings(settings), pool)
        configs = [w.config() for w in group.workers]
        assert len(configs) >= 3  # the run's queue, anthropic, unprefixed
        executors = [c["activity_executor"] for c in configs]
        assert len({id(e) for e in executors}) == len(executors)
        for config, executor in zip(configs, executors, strict=True):
            assert isinstance(executor, concurrent.futures.ThreadPoolExecutor)
            assert executor._max_workers >= config["tuner"]._get_activities_max() == slots
        async with group:
            pass
    assert all(e._shutdown for e in executors[1:])  # the group's own pools end with it


def test_a_worker_polls_the_queues_of_the_providers_it_serves(tmp_path):
    none = Settings(home=tmp_path / "a")
    assert worker_plan(none, Services.from_settings(none)).providers == frozenset()
    keyed = Settings(home=tmp_path / "b", anthropic_api_key="sk-test-forge-local")
    assert worker_plan(keyed, Services.from_settings(keyed)).providers == {"anthropic"}
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"responses": []}))
    scripted = Settings(home=tmp_path / "c", model_script=script)
    served = worker_plan(scripted, Services.from_settings(scripted)).providers
    # A script stands in for every provider the profiles and the price table name.
    assert served >= {"anthropic", names.UNPREFIXED_PROVIDER}
    assert served == {*known_providers_of(scripted), names.UNPREFIXED_PROVIDER}


def known_providers_of(settings: Settings) -> set[str]:
    layers, _ = load_profiles(settings.packs_path, home=settings.home)
    return known_providers(layers)


def test_binding_refs_name_their_provider_queue():
    assert names.provider_of("anthropic:claude-sonnet-4-6") == "anthropic"
    assert names.provider_of("house-model") == names.UNPREFIXED_PROVIDER
    assert names.provider_of(":odd") == names.UNPREFIXED_PROVIDER
    assert names.model_queue("forge", "anthropic") == "forge@anthropic"
