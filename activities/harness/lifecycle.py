"""One attempt from its start to its end: the harness's one entry, step__execute's whole body.

An earlier completion is found (a retry after a lost report runs nothing), the attempt begins
and its start is recorded, the nine harness steps run (run_attempt.py) under the worker's
heartbeat, a failure is recorded as step.failed.v1 and turned into the error Temporal may retry
by its class, and the workspace is removed off the step's path however the attempt ended.
"""

from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.errors import step_failure
from activities.harness.attempt import StepAttempt, StepServices, step_stream
from activities.harness.cleanup import REMOVER
from activities.harness.failure import StepFailure
from activities.harness.heartbeats import Heartbeats
from activities.harness.ledger import AttemptLog, recorded_usage
from activities.harness.run_attempt import run_attempt
from activities.store.events import EventStore
from schemas.compiled import CompiledPlan, CompiledStep
from schemas.event_catalogue import STEP_COMPLETED, STEP_FAILED, STEP_STARTED, read_payload
from schemas.events import EventDraft
from schemas.models import RETRYABLE_MODEL_FAILURES
from schemas.run import StepExecuteInput, StepExecuteResult
from schemas.step_events import StepCompleted, StepEffort, StepFailed, StepStarted

# Well inside the workflow's heartbeat timeout: materializing, hashing and persisting large
# files must never look like a dead worker (that would start a second attempt alongside).
HEARTBEAT_EVERY_S = 2.0
HEARTBEATS = Heartbeats(HEARTBEAT_EVERY_S)


def execute_attempt(
    inp: StepExecuteInput,
    plan: CompiledPlan,
    number: int,
    services: StepServices,
    runs_dir: Path,
) -> StepExecuteResult:
    """Attempt `number` of the step through the harness; a completed step never runs twice."""
    step = next(s for s in plan.steps if s.step_key == inp.step_key)
    # Attempt 1 cannot find an earlier completion; later attempts may (a lost report).
    try:
        done = completed_before(services.events, inp, step) if number > 1 else None
    except StepFailure as failure:
        raise step_failure(
            failure.failure_class, failure.message, attempt=number, retryable=False
        ) from None
    if done is not None:
        return done
    attempt = StepAttempt.begin(inp, plan, step, number=number, runs_dir=runs_dir)
    log = AttemptLog(services.events, attempt)
    log.buffer(started(attempt))
    try:
        with HEARTBEATS.beating():
            return run_attempt(attempt, services, log)
    except StepFailure as failure:
        raise failed(attempt, log, failure, services.events) from None
    finally:
        # No write outlives its attempt, and its start is on record however it ended.
        log.close()
        clean_up(attempt)


def completed_before(
    events: EventStore, inp: StepExecuteInput, step: CompiledStep
) -> StepExecuteResult | None:
    """A retry after the step completed (e.g. the worker died before reporting): no rerun."""
    stream = step_stream(inp.run_id, inp.step_key)
    for event in events.read_stream(stream, tenant_id=inp.scope.tenant):
        if event.type != STEP_COMPLETED:
            continue
        p = read_payload(event.type, event.payload)
        assert isinstance(p, StepCompleted)
        if p.iteration == inp.iteration:
            return StepExecuteResult(
                step_key=step.step_key,
                attempt=p.attempt,
                outputs=p.outputs,
                preflight_ref=p.preflight_ref,
                postflight_ref=p.postflight_ref,
                receipt_summary=p.receipt,
                completed_event_id=event.event_id,
                usage=recorded_usage(events, inp),
                iteration=inp.iteration,
                note=p.note,
            )
    return None


def started(attempt: StepAttempt) -> EventDraft:
    """step.started.v1 of the attempt, with the run's effort levers when it has a tier."""
    effort = attempt.inp.effort
    levers = (
        {
            "effort": StepEffort(
                tier=effort.tier,
                model_tier=effort.model_tier,
                thinking_budget_tokens=effort.thinking_budget_tokens,
            )
        }
        if effort is not None
        else {}
    )
    return attempt.draft(
        STEP_STARTED,
        str(attempt.number),
        StepStarted(
            step_key=attempt.inp.step_key,
            attempt=attempt.number,
            contract_hash=attempt.step.contract_hash,
            step_id=attempt.step.step_id,
            **levers,  # stored only when the run has an effort tier
        ),
        caused_by=attempt.inp.cause_event_id,
    )


def failed(
    attempt: StepAttempt, log: AttemptLog, failure: StepFailure, events: EventStore
) -> ApplicationError:
    """The attempt's step.failed.v1 written; the error Temporal may retry by its class."""
    retryable = (
        failure.failure_class in attempt.step.repair_policy.retryable_failure_classes
        # A provider that is rate-limited, overloaded or down: a later attempt may work.
        or failure.failure_class in RETRYABLE_MODEL_FAILURES
    )
    log.flush(
        attempt.draft(
            STEP_FAILED,
            str(attempt.number),
            StepFailed(
                step_key=attempt.inp.step_key,
                attempt=attempt.number,
                failure_class=failure.failure_class,
                message=failure.message,
                retryable=retryable,
            ),
            caused_by=attempt.started,
        )
    )
    activity.logger.warning(
        "step %s attempt %d failed (%s%s): %s",
        attempt.step.step_key,
        attempt.number,
        failure.failure_class,
        ", retryable" if retryable else "",
        failure.message.splitlines()[0] if failure.message else "",
    )
    return step_failure(
        failure.failure_class,
        failure.message,
        attempt=attempt.number,
        retryable=retryable,
        **_usage_detail(events, attempt.inp),
    )


def _usage_detail(events: EventStore, inp: StepExecuteInput) -> dict[str, Any]:
    """The usage to report with a failure; nothing when the ledger itself is the fault."""
    try:
        return {"usage": recorded_usage(events, inp).model_dump(mode="json")}
    except StepFailure:
        return {}


def clean_up(attempt: StepAttempt) -> None:
    """The attempt has ended: its workspace is removed off the step's path."""
    REMOVER.remove(attempt.workspace, attempt.skills_staging)
