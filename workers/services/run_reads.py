"""Reading runs from Temporal: connect, describe, a run's state and why it failed.

What `forge status` and `forge runs` need, and nothing that hosts a worker: this module loads
the Temporal client and the run's result models, never the workflows, the worker or
ForgePlugin (which loads both), so a read-only verb starts in a fraction of the time (issue 34
§1). Workflow and query names come from schemas.names, the same constants the workflow
registers under.
"""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowFailureError
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    ChildWorkflowError,
    FailureError,
)
from temporalio.service import RPCError

from schemas import names
from schemas.run import RunResult, RunStatusView

if TYPE_CHECKING:
    from workers.settings import Settings

__all__ = [
    "connect_reader",
    "describe",
    "failure",
    "failure_text",
    "list_query",
    "run_state",
    "tenant_attribute_fix",
    "Unanswered",
]

_QUERY_TIMEOUT = timedelta(seconds=10)


class Unanswered(RPCError):
    """The run is RUNNING and its status query went unanswered in time: no worker serves it."""


async def connect_reader(settings: Settings) -> Client:
    """A client that reads and signals runs: Forge's payloads, no worker configuration.

    Runs are started, and workers built, on a client made by `runs.connect` (ForgePlugin):
    that one also carries the workflows and the failure converter a worker needs.
    """
    from workers.services.temporal_connect import open_client

    return await open_client(settings, data_converter=pydantic_data_converter)


def tenant_attribute_fix(namespace: str) -> str:
    """What to do when `namespace` lacks the ForgeTenant search attribute every run carries."""
    from workflows.policies import TENANT_ATTRIBUTE  # its key only: no workflow code loads

    return (
        f"register it once: temporal operator search-attribute create --namespace {namespace} "
        f"--name {TENANT_ATTRIBUTE.name} --type Keyword (the embedded dev server registers it "
        "as it starts: `forge dev down`, then run again)"
    )


async def describe(
    client: Client, run_id: str, *, query_timeout: timedelta = _QUERY_TIMEOUT
) -> tuple[str, RunStatusView | None, RunResult | None]:
    """(Temporal status, live view if queryable, result if finished).

    Raises:
        LookupError: there is no such run.
        Unanswered: it runs, and its status query was not answered within `query_timeout`.
    """
    handle = client.get_workflow_handle(run_id, result_type=RunResult)
    try:
        desc = await handle.describe()
    except RPCError as exc:
        raise LookupError(f"no run {run_id!r}: {exc.message}") from None
    status = desc.status.name if desc.status else "UNKNOWN"
    if desc.status == WorkflowExecutionStatus.COMPLETED:
        return status, None, await handle.result()
    if desc.status == WorkflowExecutionStatus.RUNNING:
        try:
            view = await handle.query(
                names.STATUS, result_type=RunStatusView, rpc_timeout=query_timeout
            )
        except RPCError as exc:
            raise Unanswered(exc.message, exc.status, exc.raw_grpc_status) from exc
        return status, view, None
    return status, None, None


def list_query(status: str | None = None) -> str:
    """The visibility query of `forge runs`: every run, and each scheduled time that failed.

    A scheduled time whose capsule run never started (its input was missing) is a failed
    ScheduledCapsuleWorkflow and nothing else: listed, so that its `scheduled-…` id is found.
    `status` is Temporal's ExecutionStatus names to keep (None: all).
    """
    query = (
        f'(WorkflowType = "{names.WORKFLOW}" OR (WorkflowType = "{names.SCHEDULED_WORKFLOW}" '
        'AND ExecutionStatus = "Failed"))'
    )
    if status:
        query += f" AND ExecutionStatus IN ({status})"
    return query


def run_state(status: str, view: RunStatusView | None, result: RunResult | None) -> str:
    """The run's state as every command shows it (`describe`'s triple): the run's own word first.

    Temporal says RUNNING for a run blocked by its budget; the run says budget_exhausted.
    """
    if view is not None:
        return view.status
    if result is not None:
        return result.status
    return status.lower()


async def failure(client: Client, run_id: str) -> str | None:
    """Why a closed run did not complete, as its workflow failed (None if it did not fail)."""
    handle = client.get_workflow_handle(run_id, result_type=RunResult)
    try:
        await handle.result(follow_runs=True)
    except WorkflowFailureError as exc:
        return failure_text(exc)
    return None


def failure_text(exc: WorkflowFailureError) -> str:
    """`CODE: message` of the innermost error a run failed with (one line, no class names)."""
    cause: BaseException | None = exc.cause
    while isinstance(cause, ActivityError | ChildWorkflowError) and cause.cause is not None:
        cause = cause.cause
    if isinstance(cause, ApplicationError) and cause.type:
        return f"{cause.type}: {cause.message}"
    if isinstance(cause, FailureError):
        return cause.message
    return str(cause or exc)
