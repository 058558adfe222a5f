"""Which workers serve a run's model work: the providers it needs and the queues polled now.

Model work goes to its provider's task queue (schemas/names.model_queue); the submitter asks
Temporal which of those queues have pollers, so a run nobody can serve says so at its start.
"""

from datetime import UTC, datetime, timedelta

from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client

from activities.compile.passes import step_nodes
from compiler.plan.context import CompileContext, resolve_profile
from schemas import names
from schemas.compiled import CompiledPlan


def planner_provider_of(ctx: CompileContext) -> str | None:
    """The provider of the profile's planner model (Pass A), whose workers plan the run.

    Raises:
        CompilerError: E_UNKNOWN_PROFILE, the profile named is not defined.
    """
    binding = resolve_profile(ctx).profile.planner_phase_bindings.get("pass_a")
    return names.provider_of(binding.model_binding_ref) if binding is not None else None


POLLER_FRESH = timedelta(seconds=90)  # a long poll lasts up to 60 s, then the worker polls again


async def polled(client: Client, queue: str, kind: TaskQueueType.ValueType) -> bool:
    """Whether a worker polls `queue` for `kind` tasks right now.

    Temporal lists pollers seen over the last minutes; one whose last poll is older than a
    poll's own timeout (about a minute) has stopped.
    """
    answer = await client.workflow_service.describe_task_queue(
        DescribeTaskQueueRequest(
            namespace=client.namespace, task_queue=TaskQueue(name=queue), task_queue_type=kind
        )
    )
    recent = datetime.now(UTC) - POLLER_FRESH
    return any(p.last_access_time.ToDatetime(tzinfo=UTC) >= recent for p in answer.pollers)


# How long a run started by `forge run` lets model work wait when, at its start, no worker
# served the provider: long enough for a worker that is starting, short enough to say so.
UNSERVED_WAIT_S = 10


async def polled_providers(client: Client, task_queue: str, providers: set[str]) -> set[str]:
    """Which of `providers` a worker polls the model queue of on `task_queue` right now."""
    activity = TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY
    return {
        provider
        for provider in sorted(providers)
        if await polled(client, names.model_queue(task_queue, provider), activity)
    }


def model_providers(plan: CompiledPlan) -> set[str]:
    """The providers whose workers a compiled plan's model steps need."""
    return {n.model_provider for n in step_nodes(plan) if n.model_provider is not None}


def profile_providers(ctx: CompileContext, *, planner: bool) -> set[str]:
    """The providers a run on the context's profile may need: its executors', and its planner's.

    Raises:
        CompilerError: E_UNKNOWN_PROFILE, the profile named is not defined.
    """
    profile = resolve_profile(ctx).profile
    refs = {b.model_binding_ref for b in profile.executor_by_backend.values()}
    if planner and "pass_a" in profile.planner_phase_bindings:
        refs.add(profile.planner_phase_bindings["pass_a"].model_binding_ref)
    return {names.provider_of(ref) for ref in refs}
