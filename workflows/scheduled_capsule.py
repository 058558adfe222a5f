"""ScheduledCapsuleWorkflow: what a Temporal Schedule starts for one scheduled time.

It reads the time from Temporal (the `TemporalScheduledStartTime` search attribute Temporal sets
on every workflow a schedule starts: a fire, a trigger, a backfill), never from the wall clock;
`schedule__prepare` claims that time for the schedule in the store and resolves the input
templates for it. A time already claimed ends here, with no capsule run: that is how one
schedule and one scheduled time give at most one Forge run whatever Temporal starts (a repeated
backfill, a catch-up after an outage). Otherwise the capsule run is a child workflow, the same
CompiledRunWorkflow every run is, under a run id made from the schedule and the time.
"""

from temporalio import workflow
from temporalio.common import SearchAttributeKey, WorkflowIDReusePolicy
from temporalio.exceptions import ActivityError, ChildWorkflowError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from schemas.error_codes import ErrorCode, parse_code
    from schemas.errors import RunFailure
    from schemas.names import SCHEDULED_WORKFLOW
    from schemas.schedules import (
        ScheduledRunInput,
        ScheduledRunResult,
        SchedulePrepareInput,
        scheduled_run_id,
    )
    from workflows import operations as ops
    from workflows import policies
    from workflows.causes import cancelled, cause_message, cause_type
    from workflows.patches import PATCH_CHILD_TENANT_ATTRIBUTE, PATCH_SCHEDULED_CHILD_CANCEL
    from workflows.run import CompiledRunWorkflow

SCHEDULED_AT = SearchAttributeKey.for_datetime("TemporalScheduledStartTime")


@workflow.defn(name=SCHEDULED_WORKFLOW)
class ScheduledCapsuleWorkflow:
    """One scheduled time: claimed once, its inputs resolved, then the capsule run."""

    @workflow.run
    async def run(self, inp: ScheduledRunInput) -> ScheduledRunResult:
        info = workflow.info()
        at = info.typed_search_attributes.get(SCHEDULED_AT)
        if at is None:
            raise RunFailure(
                f"{info.workflow_id} was not started by schedule {inp.schedule}: it has no "
                "scheduled time; use `forge schedule trigger` or `forge schedule backfill`",
                code=ErrorCode.SCHEDULE_INVALID,
                retryable=False,
            )
        run_id = scheduled_run_id(inp.scope.tenant, inp.schedule, at, info.run_id)
        try:
            prepared = await ops.SCHEDULE_PREPARE(
                SchedulePrepareInput(run=inp, scope=inp.scope, scheduled_at=at, run_id=run_id)
            )
        except ActivityError as err:
            told = cause_type(err)
            raise RunFailure(
                f"schedule {inp.schedule}, {at:%Y-%m-%d %H:%M} UTC: {cause_message(err)}",
                code=parse_code(told) if told else ErrorCode.ERROR,
                retryable=False,
            ) from err
        if prepared.run is None:
            return ScheduledRunResult(
                schedule=inp.schedule,
                scheduled_at=at,
                run_id=prepared.already_ran or run_id,
                status="already_ran",
                already_ran=True,
                attempt=prepared.attempt,
            )
        # Closed early by an overlap policy (cancel-other, terminate-other), this workflow
        # asks its run to cancel, so the run records what it stopped (run.cancelled.v1).
        closing = (
            ParentClosePolicy.REQUEST_CANCEL
            if workflow.patched(PATCH_SCHEDULED_CHILD_CANCEL)
            else ParentClosePolicy.TERMINATE
        )
        tenant = (
            policies.tenant_attributes(prepared.run.scope.tenant)
            if workflow.patched(PATCH_CHILD_TENANT_ATTRIBUTE)
            else None
        )
        try:
            result = await workflow.execute_child_workflow(
                CompiledRunWorkflow.run,
                prepared.run,
                id=prepared.run.run_id,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                parent_close_policy=closing,
                search_attributes=tenant,
            )
        except ChildWorkflowError as err:
            if cancelled(err):
                raise  # this scheduled time was cancelled: it closes as cancelled, not failed
            told = cause_type(err)
            raise RunFailure(
                f"schedule {inp.schedule}, {at:%Y-%m-%d %H:%M} UTC: run {prepared.run.run_id} "
                f"failed: {cause_message(err)}",
                code=parse_code(told) if told else ErrorCode.ERROR,
                retryable=False,
            ) from err
        return ScheduledRunResult(
            schedule=inp.schedule,
            scheduled_at=at,
            run_id=result.run_id,
            status=result.status,
            attempt=prepared.attempt,
        )
