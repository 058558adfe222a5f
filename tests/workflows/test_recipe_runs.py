"""Runs and the recipe substrate: recipes__match at the start of every run (seed 004 §3.5, §7).

A run started from an objective alone compiles the plan of a high-confidence recipe with no planner
call; a trivial objective gets no plan; an objective no recipe matches clearly is refused with the
alternatives as hints. Recipe steps are model-written: the seeded run here has a model that answers
nothing, so it stops at its first step; tests/workflows/test_evaluator_runs.py runs a seeded plan
with a model that answers.
"""

import pytest
from temporalio.client import WorkflowFailureError

from compiler.recipes import build_plan, load_library
from compiler.recipes.candidate import step_keys
from tests.workflows.engine import engine
from tests.workflows.model_env import model_engine
from tests.workflows.plans import code_step, plan, write_json
from workflows.run import CompiledRunWorkflow

BILLING = "reconcile the invoices against the rate cards and flag billing discrepancies"


def verbs(trail) -> list[str]:  # type: ignore[no-untyped-def]
    return [e.verb for e in trail]


async def test_a_clear_objective_runs_the_recipe_plan_without_a_planner(
    temporal_env, task_queue, tmp_path
):
    library = load_library("stdlib/recipes")
    expected = build_plan(["billing-audit"], library)
    # A model that answers nothing: the first model-written step starts, and fails.
    async with model_engine(temporal_env, tmp_path / "home", task_queue, []) as (eng, _):
        handle = await eng.start_objective(BILLING)
        result = await handle.result()
        view = await handle.query(CompiledRunWorkflow.status)
        log = eng.services.events.list_events(run_id=handle.id)
    assert result.recipes.seeded_by == "forge/billing-audit"
    assert verbs(result.recipes.trail)[:2] == ["searched", "matched"]
    assert "billing-audit (high" in result.recipes.trail[1].summary
    # The compiled plan is the recipe's plan: same steps, in order, each badged with its source.
    assert view.order == step_keys(expected.steps)
    assert view.badges == {
        key: f"forge/{step.source}" for key, step in zip(view.order, expected.steps, strict=True)
    }
    assert result.recipes.effort is not None and result.recipes.effort.plan
    [tagged] = [e for e in log if e.type == "run.tagged.v1"]
    assert tagged.payload["tags"] == ["recipe:forge/billing-audit"]
    trail_events = [e for e in log if e.type == "recipe.trail.v1"]
    assert [e.payload["verb"] for e in trail_events] == verbs(result.recipes.trail)
    # The first model-written step fails (the script has no answer for it); nothing else runs.
    first = result.steps[view.order[0]]
    assert first.error is not None and first.status == "error"
    assert all(result.steps[k].status == "skipped" for k in view.order[1:])
    # The effort tier's levers reach the executor with every step of a seeded run.
    [started] = [e for e in log if e.type == "step.started.v1"]
    effort = result.recipes.effort
    assert started.payload["effort"] == {
        "tier": effort.tier,
        "model_tier": effort.model_tier,
        "thinking_budget_tokens": effort.thinking_budget_tokens,
    }
    assert result.status == "failed"


async def test_a_trivial_objective_gets_no_plan(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start_objective("thanks!")
        result = await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed" and result.steps == {} and result.plan_hash is None
    assert result.recipes.effort is not None and result.recipes.effort.tier == "trivial"
    assert verbs(result.recipes.trail)[-1] == "note"
    assert not [e for e in log if e.type in ("run.compiled.v1", "run.tagged.v1")]
    assert [e for e in log if e.type == "run.completed.v1"][0].payload["steps"] == 0


async def test_an_objective_without_a_clear_recipe_is_refused_with_hints(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start_objective("compose a sonnet about autumn leaves for my mother")
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
        view = await handle.query(CompiledRunWorkflow.status)
    message = str(info.value.cause)
    assert "needs the planner model" in message and "forge recipes match" in message
    assert view.status == "failed" and view.steps == []
    assert "no-match" in verbs(view.recipes.trail) or "warn" in verbs(view.recipes.trail)
    [failed] = [e for e in log if e.type == "run.failed.v1"]
    assert failed.payload["stage"] == "plan"
    assert not [e for e in log if e.type == "run.compiled.v1"]


async def test_a_run_with_a_plan_keeps_it_and_records_the_match(temporal_env, task_queue, tmp_path):
    doc = plan(code_step("a", write_json("output/a.json"), ["output/a.json"]))
    doc["mission"] = BILLING
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(doc)
        result = await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed" and list(result.steps) == ["a"]
    assert verbs(result.recipes.trail)[:2] == ["searched", "matched"]
    # The match is advice here: the run is not attributed to the recipe (no false fitness).
    assert result.recipes.seeded_by is None
    assert not [e for e in log if e.type == "run.tagged.v1"]
