"""forge.* attributes on the Temporal SDK's workflow and activity spans.

The SDK's OpenTelemetry interceptor (temporalio.contrib.opentelemetry) makes a RunWorkflow span
per workflow and a RunActivity span per activity attempt; this interceptor runs inside it and
names whose work the span is: forge.tenant and forge.run_id everywhere they apply, forge.step_id
for a step's activities, forge.attempt on every attempt and forge.failure_class on an attempt
that failed. A message to a run (a gate decision, a budget extension) carries its caller's trace
in its headers: its handling is recorded under the run's workflow span instead (UPDATE_SPAN,
SIGNAL_SPAN), linked to the caller's, so the run stays one trace. A worker without a tracer
provider never installs any of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import temporalio.client
from opentelemetry import trace
from temporalio import activity, workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import default
from temporalio.exceptions import ApplicationError
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    ExecuteWorkflowInput,
    HandleSignalInput,
    HandleUpdateInput,
    Interceptor,
    StartChildWorkflowInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from activities import telemetry as names
from schemas.errors import ForgeError
from workers.process.tenant_guard import TENANT_HEADER
from workers.telemetry import tracing
from workflows.policies import TENANT_ATTRIBUTE

__all__ = [
    "CHILD_SPAN",
    "MESSAGE_NAME",
    "SCHEDULED_SPAN",
    "SIGNAL_SPAN",
    "UPDATE_SPAN",
    "RunAttributes",
    "RunClientAttributes",
    "failure_class",
]

# The root span of a scheduled run's trace, and of a sub-recipe's child run's
# (docs/observability.md).
SCHEDULED_SPAN = "forge.run.scheduled"
CHILD_SPAN = "forge.run.child"
# A run's handling of an update or a signal, in the run's trace (its name in MESSAGE_NAME).
UPDATE_SPAN = "forge.run.update"
SIGNAL_SPAN = "forge.run.signal"
MESSAGE_NAME = "forge.message.name"

# The workflow whose id is the run id (workers/services/runs.py starts it under it).
_RUN_WORKFLOW = "CompiledRunWorkflow"


class RunAttributes(Interceptor):
    """The worker interceptor: forge.* attributes on the current workflow and activity span."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityAttributes(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _WorkflowAttributes


def failure_class(exc: BaseException) -> str:
    """What kind of failure `exc` is: its Forge error code, else its failure or Python type."""
    if isinstance(exc, ForgeError):
        return exc.code.value
    if isinstance(exc, ApplicationError) and exc.type:
        return exc.type
    return type(exc).__name__


class _ActivityAttributes(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        span = trace.get_current_span()
        if span.is_recording():
            span.set_attributes(_activity_attributes(input))
        try:
            return await super().execute_activity(input)
        except BaseException as exc:
            span.set_attribute(names.FAILURE_CLASS, failure_class(exc))
            raise


def _activity_attributes(input: ExecuteActivityInput) -> dict[str, str | int]:
    info = activity.info()
    found: dict[str, str | int] = {names.ATTEMPT: info.attempt}
    arg = input.args[0] if len(input.args) == 1 else None
    run_id = getattr(arg, "run_id", None)
    if isinstance(run_id, str):
        found[names.RUN_ID] = run_id
    elif info.workflow_type == _RUN_WORKFLOW and info.workflow_id:
        found[names.RUN_ID] = info.workflow_id
    step_key = getattr(arg, "step_key", None)
    if isinstance(step_key, str):
        found[names.STEP_ID] = step_key
    stamped: Payload | None = input.headers.get(TENANT_HEADER)
    tenant = getattr(getattr(arg, "scope", None), "tenant", None)
    if stamped is not None:
        found[names.TENANT] = default().payload_converter.from_payloads([stamped])[0]
    elif isinstance(tenant, str):
        found[names.TENANT] = tenant
    return found


class _WorkflowAttributes(WorkflowInboundInterceptor):
    # The run workflow's own span (RunWorkflow:CompiledRunWorkflow), once it started here: the
    # parent of its messages' handling. Its id comes from the workflow's random, so a worker
    # replaying the run finds the same one.
    _run_span: trace.SpanContext | None = None

    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_RunOutbound(outbound))

    async def execute_workflow(self, input: ExecuteWorkflowInput) -> Any:
        span = trace.get_current_span()
        if span.is_recording():
            info = workflow.info()
            tenant = info.typed_search_attributes.get(TENANT_ATTRIBUTE)
            if tenant is not None:
                span.set_attribute(names.TENANT, tenant)
            if info.workflow_type == _RUN_WORKFLOW:
                span.set_attribute(names.RUN_ID, info.workflow_id)
                self._run_span = span.get_span_context()
        return await super().execute_workflow(input)

    async def handle_update_handler(self, input: HandleUpdateInput) -> Any:
        with self._in_run_trace(UPDATE_SPAN, input.update):
            return await super().handle_update_handler(input)

    async def handle_signal(self, input: HandleSignalInput) -> None:
        with self._in_run_trace(SIGNAL_SPAN, input.signal):
            await super().handle_signal(input)

    @contextmanager
    def _in_run_trace(self, span_name: str, message: str) -> Iterator[None]:
        """The handling of `message` under the run's span, linked to the caller's (current)."""
        run = self._run_span
        if run is None:
            yield
            return
        asked = trace.get_current_span().get_span_context()
        attributes: dict[str, str] = {names.RUN_ID: workflow.info().workflow_id}
        tenant = workflow.info().typed_search_attributes.get(TENANT_ATTRIBUTE)
        if tenant is not None:
            attributes[names.TENANT] = tenant
        attributes[MESSAGE_NAME] = message
        with names.tracer().start_as_current_span(
            span_name,
            context=trace.set_span_in_context(trace.NonRecordingSpan(run)),
            kind=trace.SpanKind.SERVER,
            attributes=attributes,
            links=[trace.Link(asked)] if asked.is_valid and asked.trace_id != run.trace_id else [],
            record_exception=False,  # the SDK's HandleUpdate/HandleSignal span records it
        ):
            yield


class RunClientAttributes(temporalio.client.Interceptor):
    """The client interceptor: forge.run_id and forge.tenant on the SDK's StartWorkflow span."""

    def intercept_client(
        self, next: temporalio.client.OutboundInterceptor
    ) -> temporalio.client.OutboundInterceptor:
        return _ClientAttributes(next)


class _ClientAttributes(temporalio.client.OutboundInterceptor):
    async def start_workflow(self, input: temporalio.client.StartWorkflowInput) -> Any:
        span = trace.get_current_span()
        if span.is_recording() and input.workflow == _RUN_WORKFLOW:
            span.set_attribute(names.RUN_ID, input.id)
            tenant = (input.memo or {}).get("tenant")
            if isinstance(tenant, str):
                span.set_attribute(names.TENANT, tenant)
        return await super().start_workflow(input)


class _RunOutbound(WorkflowOutboundInterceptor):
    async def start_child_workflow(self, input: StartChildWorkflowInput) -> Any:
        if input.workflow != _RUN_WORKFLOW or input.id is None:
            return await super().start_child_workflow(input)
        firing = trace.get_current_span().get_span_context()
        root = trace.NonRecordingSpan(
            trace.SpanContext(
                trace_id=tracing.run_trace_id(input.id),
                span_id=tracing.run_root_span_id(input.id),
                is_remote=True,
                trace_flags=trace.TraceFlags(trace.TraceFlags.SAMPLED),
            )
        )
        attributes: dict[str, str] = {names.RUN_ID: input.id}
        tenant = workflow.info().typed_search_attributes.get(TENANT_ATTRIBUTE)
        if tenant is not None:
            attributes[names.TENANT] = tenant
        # A run started by a schedule's firing, or by a run's `uses:` step (a child run).
        parent_is_run = workflow.info().workflow_type == _RUN_WORKFLOW
        with names.tracer().start_as_current_span(
            CHILD_SPAN if parent_is_run else SCHEDULED_SPAN,
            context=trace.set_span_in_context(root),
            kind=trace.SpanKind.PRODUCER,
            attributes=attributes,
            links=[trace.Link(firing)] if firing.is_valid else [],
        ):
            # The SDK's interceptor runs inside this one (a later worker interceptor wraps the
            # outbound calls outside the earlier ones): its StartChildWorkflow span, and the
            # context it puts in the child's headers, are this span's.
            return await super().start_child_workflow(input)
