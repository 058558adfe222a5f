"""A worker built from the settings runs no more activities at once than its slots allow."""

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle
from temporalio.worker import ResourceBasedSlotSupplier

from tests.workflows.engine import engine
from tests.workflows.plans import lanes
from workers.process.concurrency import worker_options
from workers.settings import Settings

_ENDS = (
    EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED,
    EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT,
)


async def most_activities_at_once(handle: WorkflowHandle) -> int:
    """The most activity tasks of the run that were started and not yet closed at one time.

    From the server's own timestamps: a task is started when a worker's slot takes it and
    closed when that worker reports it, so the overlap is what the worker held at once.
    """
    history = await handle.fetch_history()
    started: dict[int, int] = {}  # started event id -> time (ns)
    edges = []
    for e in history.events:
        t = e.event_time.ToNanoseconds()
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            started[e.event_id] = t
        elif e.event_type in _ENDS:
            attrs = (
                e.activity_task_completed_event_attributes
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED
                else e.activity_task_failed_event_attributes
                if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED
                else e.activity_task_timed_out_event_attributes
            )
            begun = started[attrs.started_event_id]
            edges += [(begun, 1), (t, -1)]
    running = peak = 0
    for _, d in sorted(edges):  # a close sorts before a start at the same instant
        running += d
        peak = max(peak, running)
    return peak


async def _run_lanes(temporal_env, tmp_path, task_queue, **worker: object) -> int:
    settings = Settings(home=tmp_path / "h", task_queue=task_queue, **worker)
    async with engine(temporal_env, tmp_path, task_queue, settings=settings) as eng:
        handle = await eng.start(lanes(8, 8))  # 8 steps, every one ready at once
        result = await handle.result()
    assert result.status == "completed", result
    return await most_activities_at_once(handle)


async def test_activity_slots_bound_the_activities_at_once(temporal_env, tmp_path, task_queue):
    """With 2 slots, 8 ready steps run 2 at a time; with 4, more than 2 run at once."""
    assert await _run_lanes(temporal_env, tmp_path / "2", task_queue, worker_activity_slots=2) == 2
    wider = await _run_lanes(
        temporal_env, tmp_path / "4", f"{task_queue}-4", worker_activity_slots=4
    )
    assert 2 < wider <= 4


async def test_a_target_cpu_makes_a_resource_based_tuner_that_completes_runs(
    temporal_env, tmp_path, task_queue
):
    """Above the target CPU it holds slots back, never below one: a loaded host still runs."""
    settings = Settings(home=tmp_path, worker_activity_slots=3, worker_target_cpu=0.5)
    supplier = worker_options(settings)["tuner"]._get_activity_task_slot_supplier()
    assert isinstance(supplier, ResourceBasedSlotSupplier)
    assert supplier.slot_config.maximum_slots == 3
    assert supplier.tuner_config.target_cpu_usage == 0.5
    peak = await _run_lanes(
        temporal_env, tmp_path, task_queue, worker_activity_slots=3, worker_target_cpu=0.5
    )
    assert 1 <= peak <= 3
