"""A run's state as its event log tells it, pure: what the API answers when the run cannot.

The workflow's `status` query is the run's own word; while no worker serves the run (or its
query times out) the log is what remains. It knows less (no attempts, timings or budget
figures) but never more than happened: each step's last recorded state and the run's outcome.
"""

from collections.abc import Iterable

from schemas.event_catalogue import (
    BUDGET_EXHAUSTED,
    BUDGET_EXTENDED,
    GATE_DECIDED,
    GATE_REQUESTED,
    RUN_CANCELLED,
    RUN_COMPILED,
    RUN_COMPLETED,
    RUN_FAILED,
    STEP_COMPLETED,
    STEP_FAILED,
    STEP_REUSED,
    STEP_SKIPPED,
    STEP_STARTED,
)
from schemas.events import Event
from schemas.run import RunStatus, StepStatus

__all__ = ["logged_state"]

_STEP: dict[str, StepStatus] = {
    STEP_STARTED: "in_progress",
    STEP_COMPLETED: "done",
    STEP_REUSED: "done",
    STEP_FAILED: "error",
    STEP_SKIPPED: "skipped",
}
_ENDED: dict[str, RunStatus] = {
    RUN_COMPLETED: "completed",
    RUN_FAILED: "failed",
    RUN_CANCELLED: "cancelled",
}


def logged_state(events: Iterable[Event]) -> tuple[RunStatus, dict[str, StepStatus]]:
    """(the run's status, each step's last state) from its events in log order."""
    status: RunStatus = "compiling"
    steps: dict[str, StepStatus] = {}
    for e in events:
        if e.type in _ENDED:
            status = _ENDED[e.type]
        elif status in ("completed", "failed", "cancelled"):
            continue  # an ended run's late events (a publish) do not reopen it
        elif e.type == RUN_COMPILED or (e.type == BUDGET_EXTENDED and status != "compiling"):
            status = "running"
        elif e.type == BUDGET_EXHAUSTED:
            status = "budget_exhausted"
        if e.type in _STEP and isinstance(e.payload.get("step_key"), str):
            steps[e.payload["step_key"]] = _STEP[e.type]
        elif e.type == GATE_REQUESTED:
            for key in e.payload.get("gate", {}).get("gated_step_keys", []):
                steps[str(key)] = "awaiting_approval"
        elif e.type == GATE_DECIDED:
            for key in e.payload.get("gated_steps", []):
                if steps.get(str(key)) == "awaiting_approval":
                    steps[str(key)] = "pending"
    return status, steps
