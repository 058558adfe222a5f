"""Model work on its provider's task queue: where it goes, and what it means when nobody took it.

A model step or the planner call is scheduled on `QUEUE@PROVIDER` (schemas/names.model_queue),
which only a worker with that model polls; it waits there at most the run's `model_wait_s`.
Runs from before model queues (patch model-queues-v1) keep the run's queue on replay.
"""

from datetime import timedelta
from typing import Any

from temporalio import workflow
from temporalio.exceptions import ActivityError, TimeoutError, TimeoutType

with workflow.unsafe.imports_passed_through():
    from schemas import names
    from workflows.causes import Failure
    from workflows.patches import PATCH_MODEL_QUEUES


def model_routing(provider: str | None, wait_s: int) -> dict[str, Any]:
    """The execute_activity options of model work of `provider`: its queue and its wait."""
    if provider is None or not workflow.patched(PATCH_MODEL_QUEUES):
        return {}
    return {
        "task_queue": names.model_queue(workflow.info().task_queue, provider),
        "schedule_to_start_timeout": timedelta(seconds=wait_s),
    }


def unserved(err: Failure) -> bool:
    """Whether model work timed out waiting on its provider's queue: no worker serving it."""
    return (
        isinstance(err, ActivityError)
        and isinstance(err.cause, TimeoutError)
        and err.cause.type == TimeoutType.SCHEDULE_TO_START
    )


def unserved_message(what: str, provider: str | None, wait_s: int, then: str) -> str:
    return (
        f"no worker serving {provider} models took {what} within {wait_s} s: set "
        "ANTHROPIC_API_KEY (or FORGE_MODEL_SCRIPT to a script file) for `forge worker` or "
        f"`forge run` on this task queue, then {then}"
    )
