"""The workflow's compile activities come from the one pass order in compiler/plan/pipeline.py."""

import json
from pathlib import Path

from temporalio import activity

from activities.compile import CompileActivities
from compiler.plan.pipeline import COMPILE_ACTIVITIES, PASSES, activity_name

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


def test_the_worker_registers_the_pass_activities_in_pipeline_order():
    compile_ = CompileActivities.__new__(CompileActivities)  # names only: no stores needed
    names = [activity._Definition.must_from_callable(fn).name for fn in compile_.passes()]
    assert names == list(COMPILE_ACTIVITIES)
    assert [activity_name(fn) for _, fn in PASSES] == names


def test_recorded_runs_compiled_through_the_passes_in_pipeline_order():
    compiled = [h for h in sorted(HISTORIES.glob("*.json")) if "compile__freeze" in _scheduled(h)]
    assert len(compiled) >= 8
    for history in compiled:
        passes = [n for n in _scheduled(history) if n in COMPILE_ACTIVITIES]
        assert passes == list(COMPILE_ACTIVITIES), history.name
