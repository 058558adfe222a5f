"""A run's input names one tagged source; every shape ever recorded still decodes into one."""

import base64
import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from compiler.run.sources import objective_of, plan_ref_of, recipe_chain_of, run_started
from schemas.artifacts import ArtifactRef
from schemas.capsule import CapsuleRunSpec
from schemas.run import RunInput
from schemas.run_source import (
    CapsuleSource,
    ChildSource,
    ObjectiveSource,
    PlanSource,
    ResumeSource,
    ReusableStep,
)
from schemas.schedules import SchedulePrepareResult

HISTORIES = Path(__file__).parents[1] / "replay" / "histories"
PLAN = ArtifactRef(
    artifact_id="sha256:" + "a" * 64, path="meta/plan.json", sha256="a" * 64, size_bytes=9
)
CAPSULE = CapsuleRunSpec(name="billing", version=2, capsule_hash="sha256:" + "c" * 64)
REUSABLE = ReusableStep(
    step_key="a", contract_hash="sha256:" + "d" * 64, input_hashes={}, outputs=[]
)


def _flat(**fields: object) -> dict[str, object]:
    """A RunInput payload as runs before sources wrote it."""
    return {"run_id": "r1", "tenant_id": "default", "project_id": "default", **fields}


@pytest.mark.parametrize(
    ("flat", "source"),
    [
        (_flat(plan_ref=PLAN.model_dump(mode="json")), PlanSource(plan_ref=PLAN)),
        (
            _flat(plan_ref=PLAN.model_dump(mode="json"), objective="audit"),
            PlanSource(plan_ref=PLAN, objective="audit"),
        ),
        (
            _flat(objective="audit", planner_provider="anthropic"),
            ObjectiveSource(objective="audit", planner_provider="anthropic"),
        ),
        (
            _flat(capsule=CAPSULE.model_dump(mode="json"), inputs={}),
            CapsuleSource(capsule=CAPSULE),
        ),
        (
            _flat(
                plan_ref=PLAN.model_dump(mode="json"),
                objective="audit",
                resumed_from="r0",
                reusable=[REUSABLE.model_dump(mode="json")],
            ),
            ResumeSource(plan_ref=PLAN, resumed_from="r0", reusable=[REUSABLE], objective="audit"),
        ),
        (
            _flat(plan_ref=PLAN.model_dump(mode="json"), recipe_chain=["outer", "inner"]),
            ChildSource(plan_ref=PLAN, recipe_chain=["outer", "inner"]),
        ),
    ],
    ids=["plan", "plan-with-objective", "objective", "capsule", "resume", "child"],
)
def test_a_flat_payload_decodes_into_the_source_it_meant(flat, source):
    run = RunInput.model_validate(flat)
    assert run.source == source
    # Written again, it is the tagged shape, and reads back the same.
    again = RunInput.model_validate_json(run.model_dump_json())
    assert again == run and "source" in json.loads(run.model_dump_json())


def test_a_flat_payload_with_neither_plan_nor_objective_is_refused_as_before():
    with pytest.raises(ValidationError, match="needs a plan"):
        RunInput.model_validate(_flat())
    with pytest.raises(ValidationError, match="needs a plan"):
        RunInput.model_validate(_flat(objective="   "))


def _start_payloads() -> list[tuple[str, dict[str, object]]]:
    found = []
    for path in sorted(HISTORIES.glob("*.json")):
        first = json.loads(path.read_text())["events"][0]
        attrs = first["workflowExecutionStartedEventAttributes"]
        payload = attrs["input"]["payloads"][0]
        found.append((path.name, json.loads(base64.b64decode(payload["data"]))))
    return found


def test_every_recorded_run_start_decodes_into_a_source():
    kinds = {}
    for name, data in _start_payloads():
        if "schedule" in data:
            continue  # a ScheduledCapsuleWorkflow's input: its runs come from schedule__prepare
        run = RunInput.model_validate(data)
        kinds[name] = run.source.kind
        flat = data.get("source", data)  # recorded since sources (engine8) or before, flat
        assert plan_ref_of(run.source) == (
            ArtifactRef.model_validate(flat["plan_ref"]) if flat.get("plan_ref") else None
        )
        assert objective_of(run.source) == flat.get("objective")
    assert kinds["billing_demo.json"] == "plan"
    assert kinds["model_planned.engine4.json"] == "objective"
    assert kinds["capsule_sealed.engine5.json"] == "capsule"
    assert kinds["model_planned.engine8.json"] == "objective"
    assert kinds["billing_demo.engine8.json"] == "plan"
    assert set(kinds.values()) >= {"plan", "objective", "capsule"}


def test_a_scheduled_times_recorded_capsule_run_decodes():
    """schedule__prepare's results in recorded histories carry flat RunInputs."""
    results = []
    for path in sorted(HISTORIES.glob("scheduled_once*.json")):
        for event in json.loads(path.read_text())["events"]:
            done = event.get("activityTaskCompletedEventAttributes")
            if done and done.get("result"):
                data = json.loads(base64.b64decode(done["result"]["payloads"][0]["data"]))
                if "run" in data and data["run"]:
                    results.append(SchedulePrepareResult.model_validate(data))
    assert results, "no recorded schedule__prepare result: the histories changed"
    for result in results:
        assert result.run is not None and isinstance(result.run.source, CapsuleSource)


def test_run_started_records_what_each_source_gives():
    plan = RunInput(run_id="r1", source=PlanSource(plan_ref=PLAN), inputs={}, params={"n": 2})
    started = run_started(plan)
    assert started.plan_ref == PLAN and started.params == {"n": 2}
    assert started.objective is None and started.capsule is None
    child = RunInput(run_id="r2", source=ChildSource(plan_ref=PLAN, recipe_chain=["a"]))
    assert run_started(child).recipe_chain == ["a"] and recipe_chain_of(child.source) == ["a"]
    capsule = run_started(RunInput(run_id="r3", source=CapsuleSource(capsule=CAPSULE)))
    assert capsule.capsule == CAPSULE and capsule.plan_ref is None
    objective = run_started(RunInput(run_id="r4", source=ObjectiveSource(objective="audit")))
    assert objective.objective == "audit" and objective.plan_ref is None
