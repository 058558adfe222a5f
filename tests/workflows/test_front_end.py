"""A plan run's front end: match, compile__passes, and one append for everything it recorded."""

import asyncio
import threading

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError

from schemas.recipes import RECIPE_TRAIL
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan, write_json

ONE_STEP = plan(code_step("only", write_json("output/a.json"), ["output/a.json"]))


async def _scheduled(handle) -> list[str]:
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        async for e in handle.fetch_history_events()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_a_plan_run_records_its_front_end_in_one_append(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(ONE_STEP)
        result = await handle.result()
        assert result.status == "completed"
        scheduled = await _scheduled(handle)
        front = scheduled[: scheduled.index("step__execute")]
        assert front == ["recipes__match", "compile__passes", "events__append"]
        events = eng.services.events.list_events(run_id=result.run_id)
        types = [e.type for e in events]
        # In chain order: started, the trail the match wrote, then the compiled plan.
        assert types[0] == "run.started.v1"
        trail = [i for i, t in enumerate(types) if t == RECIPE_TRAIL]
        assert trail and trail == list(range(1, len(trail) + 1))
        assert types[len(trail) + 1] == "run.compiled.v1"
        assert all(e.caused_by == events[0].event_id for e in events[1 : len(trail) + 2])
        assert eng.services.events.verify_chain("default").ok


async def test_a_plan_the_compiler_rejects_still_records_its_start_and_trail(
    temporal_env, task_queue, tmp_path
):
    document = plan(
        code_step("a", write_json("output/a.json"), ["output/a.json"], depends_on=["ghost"])
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(document)  # no early compile here: the workflow's compile fails
        with pytest.raises(WorkflowFailureError):
            await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
        types = [e.type for e in events]
        assert types[0] == "run.started.v1" and types[-1] == "run.failed.v1"
        assert RECIPE_TRAIL in types
        failed = events[-1].payload
        assert failed["stage"] == "compile" and "ghost" in failed["error"]
        assert "run.compiled.v1" not in types


async def test_a_run_cancelled_while_its_held_events_are_written_still_records_them(
    temporal_env, task_queue, tmp_path
):
    """The cancel lands while the append carrying the held events waits for its retry."""
    failing = asyncio.Event()
    cancel_sent = threading.Event()
    loop = asyncio.get_running_loop()
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        store = eng.services.events
        append = store.append_batches

        def failing_append(batches):  # type: ignore[no-untyped-def]
            compiled = any(d.type == "run.compiled.v1" for _, ds in batches for d in ds)
            if compiled and not cancel_sent.is_set():
                loop.call_soon_threadsafe(failing.set)
                raise ConnectionError("the database went away")  # retried by Temporal
            return append(batches)

        store.append_batches = failing_append  # type: ignore[method-assign]
        handle = await eng.start(ONE_STEP)
        await asyncio.wait_for(failing.wait(), 60)
        await handle.cancel()  # lands while the append waits for its retry
        cancel_sent.set()
        with pytest.raises(WorkflowFailureError):
            await asyncio.wait_for(handle.result(), 60)
        types = [e.type for e in store.list_events(run_id=handle.id)]
    assert types[0] == "run.started.v1" and RECIPE_TRAIL in types
    assert "run.compiled.v1" in types
    assert "step.started.v1" not in types  # cancelled before any step
