"""Long plans continue as new past the history threshold, carrying step state forward."""

from activities.compile.typelib import load_profiles
from tests.workflows.engine import engine
from tests.workflows.plans import lanes


async def test_300_step_plan_continues_as_new_and_completes(temporal_env, task_queue, tmp_path):
    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile["profile_id"] = "long-run"
    profile["budgets"]["max_steps"] = 400  # the default profile caps plans at 200 steps
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(lanes(300, 4), history_threshold=400, profile_document=profile)
        result = await handle.result()
        assert result.status == "completed"
        assert len(result.steps) == 300
        assert all(s.status == "done" and s.attempts == 1 for s in result.steps.values())
        assert result.generation > 1  # it continued as new at least once
        published = eng.services.events.list_published(result.run_id)
        assert len(published) == 300 and {p.version for p in published} == {1}
        started = [
            e
            for e in eng.services.events.list_events(run_id=result.run_id, limit=10_000)
            if e.type == "step.started.v1"
        ]
        assert len(started) == 300  # carried state: no step ran twice across generations
