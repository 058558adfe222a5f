"""Every activity Forge's workflows call, once: its name, input and result models, timeout, retry.

OPERATIONS is the one table. ForgePlugin registers a worker's activities from it (each operation
has exactly one implementation, typed with the operation's models: workers/plugin.py), and
workflow code calls an activity only through its Operation, so a name, its models and its
policies are never written twice. Names come from schemas/names.py (persisted data); retry
policies and timeouts from workflows/policies.py.
"""

from dataclasses import dataclass
from datetime import timedelta
from typing import Any, Generic, TypeVar

from temporalio import workflow
from temporalio.common import RetryPolicy

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from schemas import names
    from schemas.budget import Usage
    from schemas.capsule import CapsuleInstantiateInput
    from schemas.recipes import (
        RecipePlanInput,
        RecipePlanResult,
        RecipesMatchInput,
        RecipesMatchResult,
    )
    from schemas.run import (
        AppendEventsInput,
        AppendEventsResult,
        CompileInput,
        CompileResult,
        FinalizeInput,
        FinalizeResult,
        FreezeResult,
        PlanInput,
        PlanResult,
        ReuseInput,
        ReuseResult,
        StepExecuteInput,
        StepExecuteResult,
        StepUsageInput,
    )
    from schemas.schedules import SchedulePrepareInput, SchedulePrepareResult
    from schemas.webhooks import WebhookSendInput, WebhookSendResult
    from workflows import policies

__all__ = ["OPERATIONS", "Operation"]

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)


@dataclass(frozen=True)
class Operation(Generic[In, Out]):
    """One activity: what it is called, what it takes and returns, how long and how often.

    `timeout` or `retry` is None where each call sets its own (a step's contract decides its
    timeout and attempts; a webhook its attempts).
    """

    name: str
    input: type[In]
    result: type[Out]
    timeout: timedelta | None
    retry: RetryPolicy | None
    heartbeat: timedelta | None = None

    async def __call__(
        self,
        inp: In,
        *,
        timeout: timedelta | None = None,
        retry: RetryPolicy | None = None,
        **options: Any,
    ) -> Out:
        """Run the activity from workflow code; `options` are execute_activity's own."""
        start_to_close = timeout or self.timeout
        policy = retry or self.retry
        if start_to_close is None or policy is None:
            raise TypeError(f"{self.name}: each call gives its own timeout and retry policy")
        result: Out = await workflow.execute_activity(
            self.name,
            inp,
            result_type=self.result,
            start_to_close_timeout=start_to_close,
            retry_policy=policy,
            heartbeat_timeout=self.heartbeat,
            **options,
        )
        return result


def _compile(name: str, result: type[Out]) -> "Operation[CompileInput, Out]":
    return Operation(name, CompileInput, result, policies.COMPILE_TIMEOUT, policies.COMPILE_RETRY)


RECIPES_MATCH = Operation(
    names.RECIPES_MATCH,
    RecipesMatchInput,
    RecipesMatchResult,
    policies.COMPILE_TIMEOUT,
    policies.COMPILE_RETRY,
    heartbeat=policies.FRONT_END_HEARTBEAT_TIMEOUT,
)
RECIPES_PLAN = Operation(
    names.RECIPES_PLAN,
    RecipePlanInput,
    RecipePlanResult,
    policies.COMPILE_TIMEOUT,
    policies.COMPILE_RETRY,
)
COMPILE_PLAN = Operation(
    names.COMPILE_PLAN,
    PlanInput,
    PlanResult,
    policies.PLAN_TIMEOUT,
    policies.PLAN_RETRY,
    heartbeat=policies.FRONT_END_HEARTBEAT_TIMEOUT,
)
COMPILE_PASSES = Operation(
    names.COMPILE_PASSES,
    CompileInput,
    FreezeResult,
    policies.COMPILE_PASSES_TIMEOUT,
    policies.COMPILE_RETRY,
    heartbeat=policies.FRONT_END_HEARTBEAT_TIMEOUT,
)
# Passes B..E one activity each, in compiler/plan/pipeline.py's order: runs started before
# compile__passes replay through these.
COMPILE_RESOLVE = _compile(names.COMPILE_RESOLVE, CompileResult)
COMPILE_CONTRACTS = _compile(names.COMPILE_CONTRACTS, CompileResult)
COMPILE_SKILLS = _compile(names.COMPILE_SKILLS, CompileResult)
COMPILE_FREEZE = _compile(names.COMPILE_FREEZE, FreezeResult)
COMPILE_PER_PASS = (COMPILE_RESOLVE, COMPILE_CONTRACTS, COMPILE_SKILLS)  # then COMPILE_FREEZE
CAPSULE_INSTANTIATE = Operation(
    names.CAPSULE_INSTANTIATE,
    CapsuleInstantiateInput,
    FreezeResult,
    policies.COMPILE_TIMEOUT,
    policies.COMPILE_RETRY,
)
SCHEDULE_PREPARE = Operation(
    names.SCHEDULE_PREPARE,
    SchedulePrepareInput,
    SchedulePrepareResult,
    policies.COMPILE_TIMEOUT,
    policies.COMPILE_RETRY,
)
STEP_EXECUTE = Operation(
    names.STEP_EXECUTE,
    StepExecuteInput,
    StepExecuteResult,
    None,  # the contract's timeout plus the harness margin (workflows/stepping.step_timeout)
    None,  # the contract's repair policy (policies.step_retry)
    heartbeat=policies.STEP_HEARTBEAT_TIMEOUT,
)
STEP_REUSE = Operation(
    names.STEP_REUSE, ReuseInput, ReuseResult, policies.FINALIZE_TIMEOUT, policies.EVENTS_RETRY
)
STEP_USAGE = Operation(
    names.STEP_USAGE, StepUsageInput, Usage, policies.EVENTS_TIMEOUT, policies.EVENTS_RETRY
)
RUN_FINALIZE = Operation(
    names.RUN_FINALIZE,
    FinalizeInput,
    FinalizeResult,
    policies.FINALIZE_TIMEOUT,
    policies.EVENTS_RETRY,
)
EVENTS_APPEND = Operation(
    names.EVENTS_APPEND,
    AppendEventsInput,
    AppendEventsResult,
    policies.EVENTS_TIMEOUT,
    policies.EVENTS_RETRY,
)
WEBHOOK_SEND = Operation(
    names.WEBHOOK_SEND,
    WebhookSendInput,
    WebhookSendResult,
    policies.WEBHOOK_SEND_TIMEOUT,
    None,  # the webhook's own attempts (policies.webhook_retry)
)

OPERATIONS: tuple[Operation[Any, Any], ...] = (
    RECIPES_MATCH,
    RECIPES_PLAN,
    COMPILE_PLAN,
    COMPILE_PASSES,
    COMPILE_RESOLVE,
    COMPILE_CONTRACTS,
    COMPILE_SKILLS,
    COMPILE_FREEZE,
    CAPSULE_INSTANTIATE,
    SCHEDULE_PREPARE,
    STEP_EXECUTE,
    STEP_REUSE,
    STEP_USAGE,
    RUN_FINALIZE,
    EVENTS_APPEND,
    WEBHOOK_SEND,
)
