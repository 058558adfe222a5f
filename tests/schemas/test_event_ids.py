"""schemas.event_ids reproduces every id format Forge has stored (idempotent appends rely on it)."""

from activities.models.gateway import model_event_id
from schemas.event_ids import EVENT_ID_MAX, event_id, stream_id
from schemas.models import CallScope
from schemas.scope import Scope


def test_run_level_ids():
    assert event_id("r1", "run.started.v1") == "r1:run.started.v1"
    assert event_id("r1", "run.failed.v1", "") == "r1:run.failed.v1"
    assert event_id("r1", "step.skipped.v1", "b") == "r1:step.skipped.v1:b"
    assert event_id("r1", "gate.reminder.v1", "g1:2") == "r1:gate.reminder.v1:g1:2"
    assert event_id("r1", "plan.drafted.v1", "drafted") == "r1:plan.drafted.v1:drafted"


def test_step_attempt_and_bridge_ids():
    assert event_id("r1", "step.started.v1", "a", "1") == "r1:step.started.v1:a:1"
    assert event_id("r1", "step.completed.v1", "a", "i2.done") == "r1:step.completed.v1:a:i2.done"
    assert event_id("r1", "tool.called.v1", "a", "i1.a1.c0") == "r1:tool.called.v1:a:i1.a1.c0"


def test_model_call_ids_keep_their_format():
    scope = CallScope(
        scope=Scope.default(), run_id="r1", stream_id="r1:step:a", step_key="a", call_key="exec"
    )
    assert model_event_id("model.called.v1", scope) == "r1:model.called.v1:a:1:1:exec"
    assert model_event_id("model.failed.v1", scope, "2") == "r1:model.failed.v1:a:1:1:exec:2"
    runless = CallScope(scope=Scope.default(), stream_id="s", call_key="k")
    assert model_event_id("model.called.v1", runless) == "-:model.called.v1:-:1:1:k"


def test_an_evaluation_proof_id_leads_with_its_proof_key():
    key = "r1:step:a:eval:1:1"
    assert event_id(key, "evaluation.proof.v1") == f"{key}:evaluation.proof.v1"


def test_long_ids_are_cut_deterministically_and_stay_distinct():
    long_one = event_id("r" * 60, "tool.called.v1", "s" * 100, "x" * 100)
    other = event_id("r" * 60, "tool.called.v1", "s" * 100, "x" * 99 + "y")
    assert len(long_one) <= EVENT_ID_MAX and len(other) <= EVENT_ID_MAX
    assert long_one == event_id("r" * 60, "tool.called.v1", "s" * 100, "x" * 100)
    assert long_one != other
    assert long_one.startswith("r" * 60 + ":tool.called.v1:")


def test_stream_ids():
    assert stream_id("r1", "run") == "r1:run"
    assert stream_id("r1", "step", "extract") == "r1:step:extract"
    assert stream_id("r1", "gate", "g1") == "r1:gate:g1"
    assert stream_id("r1", "budget") == "r1:budget"
