"""Run parameters end to end: meta/params.json, forge_bridge.param, params_read, the planner.

Real parts: the bubblewrap sandbox, the session's Temporal dev server, and for the objective
run the real `anthropic` SDK against the local Messages server with a scripted model.
"""

import json

from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.model_env import executor, model_engine, run_python, text
from tests.workflows.plans import code_step, plan, write_json

PARAMETERS = [
    {"name": "cutoff", "type": "string", "default": "2026-01-01"},
    {"name": "limit", "type": "integer", "default": 2},
    {"name": "strict", "type": "boolean", "default": False},
]

READS = """
import json, forge_bridge
values = {n: forge_bridge.param(n) for n in ("cutoff", "limit")}
values["types"] = [type(v).__name__ for v in values.values()]
open("output/values.json", "w").write(json.dumps(values))
"""


def _plan(*steps):
    return {**plan(*steps), "parameters": PARAMETERS}


def _completed(events, step_key):
    [done] = [
        e for e in events if e.type == "step.completed.v1" and e.payload["step_key"] == step_key
    ]
    return done.payload


def _texts(messages) -> str:
    """The text of a request's messages, as the model reads it."""
    return "\n".join(
        block["text"]
        for m in messages
        for block in ([{"text": m["content"]}] if isinstance(m["content"], str) else m["content"])
        if "text" in block
    )


def _outputs(eng, result):
    return {
        r.path: json.loads(eng.services.artifacts.read_bytes(Scope.default(), r.sha256, 1 << 20))
        for r in result.outputs
    }


async def test_frozen_code_reads_typed_parameters_and_the_completion_records_them(
    temporal_env, task_queue, tmp_path
):
    document = _plan(
        code_step("reads", READS, ["output/values.json"]),
        code_step("ignores", write_json("output/other.json"), ["output/other.json"]),
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        # As an objective run carries them: strings, typed in the step by their declaration.
        first = await eng.run(document, params={"limit": "7"})
        second = await eng.run(document, params={"limit": 9, "cutoff": "2026-03-31"})
        first_events = eng.services.events.list_events(run_id=first.run_id)
        first_out, second_out = _outputs(eng, first), _outputs(eng, second)
    assert first.status == "completed" and second.status == "completed"
    assert first_out["output/values.json"] == {
        "cutoff": "2026-01-01",
        "limit": 7,
        "types": ["str", "int"],
    }
    # The same plan, other values: other outputs, no code changed.
    assert second_out["output/values.json"] == {
        "cutoff": "2026-03-31",
        "limit": 9,
        "types": ["str", "int"],
    }
    assert _completed(first_events, "reads")["params_read"] == ["cutoff", "limit"]
    assert "params_read" not in _completed(first_events, "ignores")


async def test_a_value_not_of_its_type_fails_the_step_naming_the_parameter(
    temporal_env, task_queue, tmp_path
):
    document = _plan(code_step("reads", READS, ["output/values.json"]))
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(document, params={"limit": "lots"})
    error = result.steps["reads"].error
    assert result.status == "failed" and error is not None
    assert error.failure_class == "PARAMETER_INVALID"
    assert "'limit' must be an integer, not 'lots'" in error.message
    assert result.steps["reads"].attempts == 1  # a wrong value is not retried


async def test_what_the_step_leaves_at_params_read_never_crashes_the_harness(
    temporal_env, task_queue, tmp_path
):
    garbage = (
        "import forge_bridge\nforge_bridge.param('limit')\n"
        "open('/workspace/meta/params-read', 'ab')"
        ".write(b'\\xff\\x00\\ncutoff\\nnot_declared\\n')\n" + write_json("output/g.json")
    )
    planted = (
        "import os, forge_bridge\nforge_bridge.param('limit')\n"
        "os.remove('/workspace/meta/params-read')\n"
        "os.symlink('/etc/passwd', '/workspace/meta/params-read')\n" + write_json("output/l.json")
    )
    document = _plan(
        code_step("garbage", garbage, ["output/g.json"]),
        code_step("planted", planted, ["output/l.json"]),
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(document)
        events = eng.services.events.list_events(run_id=result.run_id)
    # Garbage is read as what it names that is declared; nothing undeclared gets through.
    assert result.steps["garbage"].status == "done"
    assert _completed(events, "garbage")["params_read"] == ["cutoff", "limit"]
    # A planted link is a violation the platform names; the harness itself does not crash.
    error = result.steps["planted"].error
    assert error is not None and error.failure_class == "CONTRACT_VIOLATION"
    assert "planted symlink meta/params-read" in error.message


PLANNED = {
    "mission": "Totals after a cutoff",
    "parameters": [
        {"name": "min_amount", "type": "number", "default": 5, "description": "smallest sale"},
        {"name": "region", "type": "string", "default": "north"},
    ],
    "steps": [
        {
            "step_key": "totals",
            "label": "Count large sales",
            "objective": "MUST count the sales of the region parameter above min_amount",
            "expected_outputs": [{"path": "output/count.json", "role": "primary"}],
            "success_criteria": "count.json holds the count",
        }
    ],
}

MODEL_CODE = """
import json, forge_bridge
rows = [("north", 10.5), ("south", 4.0), ("north", 2.25), ("north", 7.0)]
region, least = forge_bridge.param("region"), forge_bridge.param("min_amount")
count = sum(1 for r, amount in rows if r == region and amount >= least)
open("output/count.json", "w").write(json.dumps({"region": region, "count": count}))
"""


async def test_the_planner_declares_parameters_and_the_executor_is_told_to_read_them(
    temporal_env, task_queue, tmp_path
):
    script = [
        {"when": {"consumer": "planner"}, "response": text(json.dumps(PLANNED), thinking=True)},
        executor("totals", run_python(MODEL_CODE), times=2),
    ]
    async with model_engine(temporal_env, tmp_path / "home", task_queue, script) as (eng, server):
        handle = await eng.start_objective(
            "count the large sales of a region", params={"min_amount": "8"}
        )
        result = await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
        out = _outputs(eng, result)
        asked = {
            h.get("x-forge-consumer"): _texts(r["messages"])
            for r, h in zip(server.requests, server.headers, strict=True)
        }
    assert result.status == "completed", result.steps
    assert out["output/count.json"] == {"region": "north", "count": 1}
    assert _completed(events, "totals")["params_read"] == ["min_amount", "region"]
    # The planner is asked to declare what a user may change; the executor sees the run's
    # parameters with their types and values, and how to read them.
    assert "Run parameters: declare in `parameters`" in asked["planner"]
    assert '"parameters": [' in asked["planner"]
    prompt = asked["executor"]
    assert "### run parameters" in prompt and 'forge_bridge.param("name")' in prompt
    assert "- min_amount (number) = 8.0 — smallest sale" in prompt
    assert '- region (string) = "north"' in prompt


def test_the_planner_is_shown_the_values_the_user_gave():
    from activities.compile.planner import parameters_text

    shown = parameters_text({"cutoff": "2026-01-31", "limit": "5"})
    assert "declare in `parameters` every value the user might change" in shown
    assert '- cutoff = "2026-01-31"' in shown and '- limit = "5"' in shown
    assert "gave no parameter values" in parameters_text({})
