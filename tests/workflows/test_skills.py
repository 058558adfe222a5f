"""`invoke skill:` and compose-from-library (seed 004 §4.3, §5.1) against the stdlib skills.

A step bound to a skill carries the skill's version and output schema in its contract; every JSON
output is validated against that schema by the harness. An objective no recipe matches is composed
from the skills that match it, written to the overlay library and run, and is matchable next time.
"""

import json

import pytest
from temporalio.client import WorkflowFailureError

from compiler.recipes import load_library
from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan
from workflows.run import CompiledRunWorkflow

PROFILE = {
    "rows": 2,
    "columns": [
        {"name": "id", "type": "integer", "empty": 0, "distinct": 2},
        {"name": "name", "type": "string", "empty": 1, "distinct": 1},
    ],
}


def skilled(value: object) -> dict[str, object]:
    code = f"import json\njson.dump({value!r}, open('output/profile.json', 'w'))\n"
    step = code_step("profile", code, ["output/profile.json"])
    step["invoke_skill"] = "csv-profile"
    return plan(step)


async def test_a_skill_step_output_is_validated_against_the_skill_schema(
    temporal_env, task_queue, tmp_path
):
    bad = {**PROFILE, "columns": [{"name": "id", "type": "uuid", "empty": 0, "distinct": 2}]}
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        good = await eng.run(skilled(PROFILE))
        refused = await eng.run(skilled(bad))
    assert good.status == "completed"
    error = refused.steps["profile"].error
    assert refused.status == "failed" and error is not None
    assert error.failure_class == "SKILL_OUTPUT_INVALID"
    assert "output/profile.json at $.columns[0].type: 'uuid' is not one of" in error.message
    assert "csv-profile" in error.message


async def test_an_unknown_skill_fails_the_compile_closed(temporal_env, task_queue, tmp_path):
    doc = skilled(PROFILE)
    doc["steps"][0]["invoke_skill"] = "no-such-skill"  # type: ignore[index]
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(doc)
        with pytest.raises(WorkflowFailureError) as info:
            await handle.result()
    assert "E_UNKNOWN_SKILL" in str(info.value.cause) or "no-such-skill" in str(info.value.cause)
    assert "csv-profile" in str(info.value.cause)  # the hint lists the skills there are


async def test_no_recipe_match_composes_a_recipe_from_the_skill_library(
    temporal_env, task_queue, tmp_path
):
    objective = "infer the type of every column and count distinct values"
    home = tmp_path / "home"
    async with engine(temporal_env, home, task_queue) as eng:
        first = await (await eng.start_objective(objective)).result()
        second_handle = await eng.start_objective(objective)
        second = await second_handle.result()
        view = await second_handle.query(CompiledRunWorkflow.status)
        log = eng.services.events.list_events(run_id=second_handle.id)
    verbs = [e.verb for e in first.recipes.trail]
    assert verbs[:3] == ["searched", "no-match", "authored"]
    [authored] = [e for e in first.recipes.trail if e.verb == "authored"]
    slug = authored.detail["slug"]
    assert authored.detail["skills"] == ["csv-profile"]
    overlay = load_library(home / "recipes")
    recipe = overlay[slug]
    assert recipe.authored_by == "compose-from-library" and recipe.owner == "local"
    assert recipe.lineage["query"] == objective
    assert [s.directives.invoke_skill for s in recipe.steps] == ["csv-profile"]
    assert first.recipes.seeded_by == f"local/{slug}"
    # Next time the composed recipe is simply matched: no authoring.
    assert [e.verb for e in second.recipes.trail][:2] == ["searched", "matched"]
    assert second.recipes.seeded_by == f"local/{slug}"
    assert view.badges == {"invoke_csv_profile": f"local/{slug}"}
    [tagged] = [e for e in log if e.type == "run.tagged.v1"]
    assert tagged.payload["tags"] == [f"recipe:local/{slug}"]
    plan_doc = json.loads(
        eng.services.artifacts.read_bytes(
            Scope.default(), tagged.payload["plan_ref"]["sha256"], 1 << 20
        )
    )
    assert plan_doc["steps"][0]["invoke_skill"] == "csv-profile"
    assert plan_doc["steps"][0]["expected_outputs"] == [
        {"path": "output/invoke_csv_profile.json", "role": "primary", "location": "sandbox"}
    ]
