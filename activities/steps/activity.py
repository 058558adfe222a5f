"""step__execute and step__usage: one step attempt through the harness, with its events."""

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities.errors import step_failure
from activities.harness.attempt import StepAttempt, StepServices, step_stream
from activities.harness.cleanup import REMOVER
from activities.harness.codeact_session import ModelServices
from activities.harness.failure import StepFailure
from activities.harness.heartbeats import Heartbeats
from activities.harness.ledger import AttemptLog, recorded_usage
from activities.harness.run_attempt import run_attempt
from activities.net.outbound import OutboundClient
from activities.steps.plans import CompiledPlans
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from activities.store.skills_registry import SkillRegistry
from compiler.typesystem.library import TypeLibrary
from schemas import names
from schemas.budget import Usage
from schemas.compiled import CompiledStep
from schemas.context import ContextPack
from schemas.event_catalogue import STEP_COMPLETED, STEP_FAILED, STEP_STARTED, read_payload
from schemas.events import EventDraft
from schemas.models import RETRYABLE_MODEL_FAILURES
from schemas.run import StepExecuteInput, StepExecuteResult, StepUsageInput
from schemas.step_events import StepCompleted, StepEffort, StepFailed, StepStarted

# Well inside the workflow's heartbeat timeout: materializing, hashing and persisting large
# files must never look like a dead worker (that would start a second attempt alongside).
HEARTBEAT_EVERY_S = 2.0
_HEARTBEATS = Heartbeats(HEARTBEAT_EVERY_S)


class StepActivities:
    """Runs one step attempt through the nine harness steps; holds the stores it writes to."""

    def __init__(
        self,
        artifacts: ArtifactStore,
        events: EventStore,
        library: TypeLibrary,
        runs_dir: Path,
        *,
        plans: CompiledPlans,
        models: ModelServices | None = None,
        registry: SkillRegistry | None = None,
        packs: Mapping[str, ContextPack] | None = None,
        outbound: OutboundClient | None = None,
    ) -> None:
        self._services = StepServices(
            artifacts=artifacts,
            events=events,
            library=library,
            models=models,
            registry=registry,
            packs=dict(packs if packs is not None else models.packs if models else {}),
            outbound=outbound if outbound is not None else OutboundClient(),
        )
        self._runs_dir = runs_dir
        self._plans = plans

    @activity.defn(name=names.STEP_USAGE)
    def usage(self, inp: StepUsageInput) -> Usage:
        """Recorded usage of a step whose last attempt died without reporting it."""
        try:
            return recorded_usage(self._services.events, inp)
        except StepFailure as failure:
            raise step_failure(
                failure.failure_class, failure.message, attempt=1, retryable=False
            ) from None

    @activity.defn(name=names.STEP_EXECUTE)
    def execute(self, inp: StepExecuteInput) -> StepExecuteResult:
        """One attempt through the harness; a completed step is never executed twice."""
        number = activity.info().attempt
        plan = self._plans.get(inp.scope, inp.compiled_ref)
        step = next(s for s in plan.steps if s.step_key == inp.step_key)
        # Attempt 1 cannot find an earlier completion; later attempts may (a lost report).
        try:
            done = _completed_before(self._services.events, inp, step) if number > 1 else None
        except StepFailure as failure:
            raise step_failure(
                failure.failure_class, failure.message, attempt=number, retryable=False
            ) from None
        if done is not None:
            return done
        attempt = StepAttempt.begin(inp, plan, step, number=number, runs_dir=self._runs_dir)
        log = AttemptLog(self._services.events, attempt)
        log.buffer(_started(attempt))
        try:
            with _HEARTBEATS.beating():
                return run_attempt(attempt, self._services, log)
        except StepFailure as failure:
            raise self._failed(attempt, log, failure) from None
        finally:
            # No write outlives its attempt, and its start is on record however it ended.
            log.close()
            _clean_up(attempt)

    def _failed(
        self, attempt: StepAttempt, log: AttemptLog, failure: StepFailure
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
            **_usage_detail(self._services.events, attempt.inp),
        )


def _usage_detail(events: EventStore, inp: StepExecuteInput) -> dict[str, Any]:
    """The usage to report with a failure; nothing when the ledger itself is the fault."""
    try:
        return {"usage": recorded_usage(events, inp).model_dump(mode="json")}
    except StepFailure:
        return {}


def _started(attempt: StepAttempt) -> EventDraft:
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


def _completed_before(
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


def _clean_up(attempt: StepAttempt) -> None:
    """The attempt has ended: its workspace is removed off the step's path."""
    REMOVER.remove(attempt.workspace, attempt.skills_staging)
