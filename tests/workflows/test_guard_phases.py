"""The profile's step_input and step_output phases, applied by the harness (issue 33).

Real parts: the Temporal dev server, bubblewrap, the stores. The default profile blocks a
credential in a step's inputs or outputs; a profile whose phase reports lets the step complete
and records guard.found.v1; personal data never blocks.
"""

import hashlib
import json
from typing import Any

from activities.compile.typelib import load_profiles
from schemas.guard import GUARD_FOUND
from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan, reading_plan, write_json

ANTHROPIC = "sk-ant-api03-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" * 2
LEAKY = json.dumps({"service": "billing", "config": {"api_key": ANTHROPIC}})
PEOPLE = json.dumps({"owner": "ada.lovelace@example.co.uk", "phone": "+1 415 555 0132"})


def _writing(value: str) -> dict[str, Any]:
    """A step that writes `value` to output/a.json, and one that depends on it."""
    return plan(
        code_step("leak", write_json("output/a.json", value), ["output/a.json"]),
        code_step(
            "after",
            write_json("output/b.json"),
            ["output/b.json"],
            depends_on=["leak"],
            reads=["output/a.json"],
        ),
    )


def _profile(**modes: str) -> dict[str, Any]:
    """The built-in default profile with the given phases' modes."""
    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile["profile_id"] = "guard-" + "-".join(f"{k}-{v}" for k, v in sorted(modes.items()))
    for phase, mode in modes.items():
        profile["validation"]["phases"][phase]["mode"] = mode
    return profile


async def test_a_credential_in_an_output_blocks_the_step_and_nothing_is_published(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(_writing(LEAKY))
        events = eng.services.events.list_events(run_id=result.run_id)
        stored = eng.services.artifacts.exists(
            Scope.default(), hashlib.sha256(LEAKY.encode()).hexdigest()
        )
    leak = result.steps["leak"]
    assert result.status == "failed" and leak.status == "error"
    assert leak.error.failure_class == "POLICY_BLOCKED" and leak.attempts == 1
    message = leak.error.message
    assert message.startswith(
        "step leak wrote credentials: output/a.json at JSON pointer /config/api_key: "
        "Anthropic API key."
    )
    assert "step_output phase blocks credentials" in message
    assert "validation.phases.step_output.mode is report" in message
    assert result.steps["after"].status == "skipped"
    # Nothing of the output reached the store or the log, and the value is nowhere.
    assert not stored
    assert not [e for e in events if e.type == "artifact.published.v1"]
    assert not [e for e in events if e.type == GUARD_FOUND]
    assert ANTHROPIC not in "\n".join(e.model_dump_json() for e in events)
    [failed] = [e for e in events if e.type == "step.failed.v1"]
    assert failed.payload["failure_class"] == "POLICY_BLOCKED"
    assert failed.payload["retryable"] is False


async def test_in_report_mode_the_step_completes_and_the_finding_is_recorded(
    temporal_env, task_queue, tmp_path
):
    profile = _profile(step_output="report", step_input="report")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(_writing(LEAKY), profile_document=profile)
        events = eng.services.events.list_events(run_id=result.run_id)
    assert result.status == "completed", result
    found = [e for e in events if e.type == GUARD_FOUND]
    # The leaking step's output, and the next step's input (the same file).
    assert [(e.payload["step_key"], e.payload["phase"]) for e in found] == [
        ("leak", "step_output"),
        ("after", "step_input"),
    ]
    [finding] = found[0].payload["findings"]
    assert finding == {
        "file": "output/a.json",
        "where": "/config/api_key",
        "detector": "anthropic_key",
        "masked": finding["masked"],
    }
    assert ANTHROPIC not in json.dumps(found[0].payload)
    by_id = {e.event_id: e for e in events}
    assert by_id[found[0].caused_by].type == "step.receipt.postflight.v1"
    assert by_id[found[1].caused_by].type == "step.receipt.preflight.v1"
    published = [e.payload["artifact"]["path"] for e in events if e.type == "artifact.published.v1"]
    assert sorted(published) == ["output/a.json", "output/b.json"]


async def test_personal_data_in_an_output_does_not_block(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(_writing(PEOPLE))
        events = eng.services.events.list_events(run_id=result.run_id)
    assert result.status == "completed", result
    assert not [e for e in events if e.type == GUARD_FOUND]


async def test_a_credential_in_a_declared_input_is_refused_before_the_step_runs(
    temporal_env, task_queue, tmp_path
):
    data = tmp_path / "creds.csv"
    data.write_text(f"service,note\nbilling,ok\nbilling,use key {ANTHROPIC}\n")
    doc = reading_plan()
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(doc, {"data": data})
        events = eng.services.events.list_events(run_id=result.run_id)
    read = result.steps["read"]
    assert read.error.failure_class == "POLICY_BLOCKED" and read.attempts == 1
    assert read.error.message.startswith(
        "step read was not run: its inputs hold credentials: "
        "input/data.csv at line 3: Anthropic API key."
    )
    assert "step_input phase blocks credentials" in read.error.message
    # Refused at step_input: the step's code never ran, so there is no postflight.
    types = [e.type for e in events if e.payload.get("step_key") == "read"]
    assert "step.receipt.preflight.v1" in types
    assert "step.receipt.postflight.v1" not in types
