"""The workflow's compile activities come from the one pass order in compiler/plan/pipeline.py."""

import json
from pathlib import Path

import pytest
from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.compile.passes import CompileActivities
from activities.compile.typelib import load_library, load_profiles
from activities.store.artifacts import LocalArtifactStore
from compiler.plan.pipeline import COMPILE_ACTIVITIES, COMPILE_PASSES, PASSES
from schemas.artifacts import ArtifactRef
from schemas.budget import Usage
from schemas.run import CompileInput
from schemas.scope import Scope
from tests.workflows.engine import BILLING
from workers.plugin import activities_of
from workflows import operations as ops

HISTORIES = Path(__file__).parents[1] / "replay" / "histories"


def _scheduled(history: Path) -> list[str]:
    events = json.loads(history.read_text())["events"]
    return [
        e["activityTaskScheduledEventAttributes"]["activityType"]["name"]
        for e in events
        if "activityTaskScheduledEventAttributes" in e
    ]


def test_every_pass_has_one_activity_named_after_it_in_pipeline_order():
    assert COMPILE_ACTIVITIES == tuple(f"compile__{fn.__name__}" for _, fn in PASSES)
    assert COMPILE_ACTIVITIES == (
        "compile__resolve",
        "compile__contracts",
        "compile__skills",
        "compile__freeze",
    ), "activity names are persisted in histories: renaming a pass breaks replay"


def test_the_worker_registers_compile_passes_and_each_pass():
    compile_ = CompileActivities.__new__(CompileActivities)  # names only: no stores needed
    names = {activity._Definition.must_from_callable(fn).name for fn in activities_of(compile_)}
    assert names == {COMPILE_PASSES, *COMPILE_ACTIVITIES}
    # The workflow compiles per pass in the pipeline's order, then freezes.
    per_pass = [op.name for op in (*ops.COMPILE_PER_PASS, ops.COMPILE_FREEZE)]
    assert per_pass == list(COMPILE_ACTIVITIES)


def _compile_activities(tmp_path: Path) -> CompileActivities:
    layers, _ = load_profiles()
    return CompileActivities(LocalArtifactStore(tmp_path / "artifacts"), load_library(), layers)


def test_compile_passes_freezes_what_the_pass_activities_freeze(tmp_path):
    """One activity or one per pass (runs started before it): the same compiled plan."""
    compile_ = _compile_activities(tmp_path)
    document = json.loads((BILLING / "plan.json").read_text())
    plan_ref = compile_._artifacts.put_bytes(
        Scope.default(), json.dumps(document).encode(), logical_path="meta/plans/plan.json"
    )

    def inp(ref: ArtifactRef) -> CompileInput:
        return CompileInput(
            run_id="run-1", scope=Scope.default(), source_ref=ref, profile_ref="default"
        )

    ref = plan_ref
    for name in COMPILE_ACTIVITIES[:-1]:
        ref = getattr(compile_, name.removeprefix("compile__"))(inp(ref)).output_ref
    per_pass = compile_.freeze(inp(ref))
    at_once = compile_.compile_passes(inp(plan_ref))
    assert at_once == per_pass
    planned = {s["step_key"] for s in document["steps"]}
    assert at_once.plan_hash.startswith("sha256:")
    assert planned <= {n.step_key for n in at_once.nodes}
    assert at_once.usage == Usage()  # no model bound: nothing spent


def test_compile_passes_names_the_pass_that_refused_the_plan(tmp_path):
    compile_ = _compile_activities(tmp_path)
    document = json.loads((BILLING / "plan.json").read_text())
    document["steps"][1]["depends_on"] = ["no-such-step"]
    ref = compile_._artifacts.put_bytes(
        Scope.default(), json.dumps(document).encode(), logical_path="p.json"
    )
    with pytest.raises(ApplicationError) as refused:
        compile_.compile_passes(
            CompileInput(
                run_id="run-1", scope=Scope.default(), source_ref=ref, profile_ref="default"
            )
        )
    assert refused.value.non_retryable
    assert refused.value.type == "CompilerError"
    assert "no-such-step" in str(refused.value.details) + str(refused.value)


def test_recorded_runs_compiled_through_the_passes_in_pipeline_order():
    compiled = [h for h in sorted(HISTORIES.glob("*.json")) if "compile__freeze" in _scheduled(h)]
    assert len(compiled) >= 8
    for history in compiled:
        passes = [n for n in _scheduled(history) if n in COMPILE_ACTIVITIES]
        assert passes == list(COMPILE_ACTIVITIES), history.name
        assert COMPILE_PASSES not in _scheduled(history), history.name


def test_runs_recorded_since_compile_passes_compile_in_one_activity():
    recorded = [h for h in sorted(HISTORIES.glob("*.json")) if COMPILE_PASSES in _scheduled(h)]
    assert len(recorded) >= 8
    for history in recorded:
        names = _scheduled(history)
        assert names.count(COMPILE_PASSES) == 1, history.name
        assert not set(names) & set(COMPILE_ACTIVITIES), history.name
