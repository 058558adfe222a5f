"""`uses:` steps (seed 004 §4.2): a sub-recipe runs as a child run, under a depth cap and a cycle
guard carried down the call stack of recipes.

The recipes here live in the worker's overlay (FORGE_HOME/recipes). Recipe steps are model-written
and this build has no model-written executor yet, so every child run ends at a model step with
EXECUTOR_UNAVAILABLE; what is tested is the call itself, the guards and how failures fold back.
"""

from pathlib import Path

from temporalio.client import WorkflowExecutionStatus

from compiler.recipes import author
from schemas.run import RunResult
from tests.workflows.engine import engine
from tests.workflows.plans import plan


def recipe(home: Path, slug: str, body: str) -> None:
    author(
        {
            "slug": slug,
            "title": f"Recipe {slug}",
            "summary": f"test recipe {slug}",
            "tags": [slug],
            "steps": [{"title": f"Work of {slug}", "body": body}],
        },
        home / "recipes",
    )


def calling(slug: str, source: str) -> dict[str, object]:
    return plan(
        {
            "step_key": "call",
            "label": "Call a sub-recipe",
            "objective": f"run {slug}",
            "kind": "recipe",
            "uses_recipe": slug,
            "source_recipe": f"local/{source}",
            "domain_pack_ids": [],
            "workflow_pack_ids": [],
            "policy_profile_id": "strict.fail-closed.v1",
        }
    )


async def test_a_uses_step_runs_the_sub_recipe_as_a_child_run(temporal_env, task_queue, tmp_path):
    home = tmp_path / "home"
    recipe(home, "inner", "done-when: the inner work is written\nDo the inner work.")
    async with engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(calling("inner", "outer"))
        result = await handle.result()
        child = eng.client.get_workflow_handle(f"{handle.id}-call", result_type=RunResult)
        described = await child.describe()
        child_result = await child.result()
    step = result.steps["call"]
    assert result.status == "failed" and step.status == "error"
    assert step.error is not None and step.error.failure_class == "SUB_RECIPE_FAILED"
    assert f"child run {handle.id}-call" in step.error.message
    assert "EXECUTOR_UNAVAILABLE" in step.error.message  # attributed to the child's step
    assert described.status == WorkflowExecutionStatus.COMPLETED
    assert child_result.status == "failed" and list(child_result.steps) == ["work_of_inner"]
    verbs = [(e.verb, e.step_key) for e in result.recipes.trail]
    assert (
        ("composed", None) in verbs and ("dispatch", "call") in verbs and ("warn", "call") in verbs
    )


async def test_a_recipe_that_would_re_enter_itself_is_refused(temporal_env, task_queue, tmp_path):
    home = tmp_path / "home"
    recipe(home, "cyc-a", "uses: cyc-b\nCall b.")
    recipe(home, "cyc-b", "uses: cyc-a\nCall a again.")
    async with engine(temporal_env, home, task_queue) as eng:
        result = await eng.run(calling("cyc-b", "cyc-a"))
    message = result.steps["call"].error.message  # type: ignore[union-attr]
    assert "recursion guard: cyc-a -> cyc-b -> cyc-a re-enters cyc-a" in message


async def test_sub_recipe_calls_nest_at_most_three_deep(temporal_env, task_queue, tmp_path):
    home = tmp_path / "home"
    for i in range(1, 5):
        recipe(home, f"d{i}", f"uses: d{i + 1}\nGo deeper." if i < 4 else "Bottom.")
    async with engine(temporal_env, home, task_queue) as eng:
        result = await eng.run(calling("d2", "d1"))
    message = result.steps["call"].error.message  # type: ignore[union-attr]
    assert "would nest 4 recipe calls deep (at most 3); chain d1 -> d2 -> d3" in message


async def test_a_missing_sub_recipe_fails_the_step_closed(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(calling("no-such-recipe", "outer"))
    error = result.steps["call"].error
    assert error is not None and error.failure_class == "RECIPE_NOT_FOUND"
    assert "`uses: no-such-recipe` names no recipe" in error.message
