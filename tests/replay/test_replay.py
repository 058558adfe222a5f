"""Every committed history replays against today's workflow code (determinism and versioning)."""

from pathlib import Path

import pytest
from temporalio.api.enums.v1 import ParentClosePolicy
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from tests.replay.record import SCENARIOS
from workers.plugin import ForgePlugin

HISTORIES = sorted((Path(__file__).parent / "histories").glob("*.json"))


def test_there_are_recorded_histories():
    assert {p.stem for p in HISTORIES} >= {
        "billing_demo",
        "billing_demo_gated",
        "gated_approved",
        "failed_with_skips",
        "cancelled_in_flight",
        "cancelled_before_patch",
        "budget_exhausted_extended",
    }
    # The reshaped engine (issue 14) recorded every scenario again, once more when the passes
    # became one activity (compile__passes), and again when the run's state became one frozen
    # RunState and its input a tagged source (issue 32); the older ones stay.
    for tag in ("engine2", "engine3", "engine8"):
        assert {f"{name}.{tag}" for name in SCENARIOS} <= {p.stem for p in HISTORIES}


MODEL_QUEUE_SCENARIOS = ("model_planned", "objective_seeded")


def test_model_queue_histories_schedule_model_work_on_the_providers_queue():
    """engine4: recorded once model work went to its provider's queue (model-queues-v1)."""
    for name in MODEL_QUEUE_SCENARIOS:
        path = Path(__file__).parent / "histories" / f"{name}.engine4.json"
        history = WorkflowHistory.from_json(name, path.read_text())
        queues = {
            e.activity_task_scheduled_event_attributes.task_queue.name
            for e in history.events
            if e.HasField("activity_task_scheduled_event_attributes")
        }
        assert any(q.endswith("@anthropic") for q in queues), (name, queues)


def recorded(stem: str) -> WorkflowHistory:
    path = Path(__file__).parent / "histories" / f"{stem}.json"
    return WorkflowHistory.from_json(stem, path.read_text())


def activities_of(history: WorkflowHistory) -> list[str]:
    """The activity types a history schedules, in order."""
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]


def test_a_capsule_run_history_has_its_front_end_and_no_compile_pass():
    """engine5: a sealed capsule run (capsule__instantiate instead of recipes and compiling)."""
    scheduled = activities_of(recorded("capsule_sealed.engine5"))
    assert scheduled[0] == "capsule__instantiate"
    assert not {"recipes__match", "compile__passes", "compile__plan"} & set(scheduled)
    assert scheduled.count("step__execute") == 7


def test_a_scheduled_time_history_claims_then_runs_its_capsule_as_a_child():
    """engine5: one scheduled time (schedule__prepare, then the capsule run as a child)."""
    history = recorded("scheduled_once.engine5")
    scheduled = activities_of(history)
    children = [
        e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name
        for e in history.events
        if e.HasField("start_child_workflow_execution_initiated_event_attributes")
    ]
    assert (scheduled, children) == (["schedule__prepare"], ["CompiledRunWorkflow"])


def test_a_scheduled_time_asks_its_run_to_cancel_when_it_closes_early_since_engine6():
    """engine6 (scheduled-child-cancel-v1): the child run's parent close policy is REQUEST_CANCEL,
    so an overlap policy's cancel-other or terminate-other lets the run record run.cancelled;
    engine5 histories, without the marker, keep TERMINATE."""
    policies = {}
    for name in ("scheduled_once.engine5", "scheduled_once.engine6"):
        history = recorded(name)
        [child] = [
            e.start_child_workflow_execution_initiated_event_attributes
            for e in history.events
            if e.HasField("start_child_workflow_execution_initiated_event_attributes")
        ]
        policies[name] = ParentClosePolicy.Name(child.parent_close_policy)
    assert policies == {
        "scheduled_once.engine5": "PARENT_CLOSE_POLICY_TERMINATE",
        "scheduled_once.engine6": "PARENT_CLOSE_POLICY_REQUEST_CANCEL",
    }


def test_a_run_cancelled_in_its_front_end_waits_for_the_activity_then_records_it_since_engine9():
    """engine9 (front-end-cancel-v1): compile__plan, cancelled, reports it stopped before the run
    appends run.cancelled and closes; before it, the run closed with the activity still going."""
    history = recorded("cancelled_planning.engine9")
    kinds = [e.WhichOneof("attributes") for e in history.events]
    canceled = kinds.index("activity_task_canceled_event_attributes")
    scheduled = [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events[canceled:]
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert scheduled == ["events__append"]  # run.cancelled, once the activity stopped
    assert kinds[-1] == "workflow_execution_canceled_event_attributes"


@pytest.mark.parametrize("path", HISTORIES, ids=[p.stem for p in HISTORIES])
async def test_history_replays(path: Path):
    history = WorkflowHistory.from_json(path.stem, path.read_text())
    replayer = Replayer(workflows=[], plugins=[ForgePlugin()])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, f"{path.name}: {result.replay_failure}"
