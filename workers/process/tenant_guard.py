"""A worker acts only for the tenant of the run it serves (issue 20 §2).

Every Forge workflow carries its tenant in the ForgeTenant search attribute, set once by the client
that starts it (workers/services/runs.py, the scheduled and webhook workflows for their children).
The workflow half of this interceptor stamps that tenant on every activity it schedules, as a
Temporal header; the activity half compares it with every tenant the activity's input names (each
`scope` and `tenant_id` in its arguments, nested models and lists included) before the activity
runs, and refuses a mismatch with TENANT_MISMATCH, not retried: a workflow of acme can never make a
worker read or write globex's rows, artifacts or inputs, whatever its input says. A workflow started
before ForgeTenant existed (or by hand, without it) has no header, and its activities run as they
did.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel
from temporalio import workflow
from temporalio.api.common.v1 import Payload
from temporalio.converter import default
from temporalio.worker import (
    ActivityInboundInterceptor,
    ExecuteActivityInput,
    Interceptor,
    StartActivityInput,
    StartLocalActivityInput,
    WorkflowInboundInterceptor,
    WorkflowInterceptorClassInput,
    WorkflowOutboundInterceptor,
)

from activities.errors import to_application_error
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Scope
from workflows.policies import TENANT_ATTRIBUTE

__all__ = ["TENANT_HEADER", "TenantGuard", "named_tenants"]

TENANT_HEADER = "forge-tenant"


class TenantGuard(Interceptor):
    """The worker interceptor: stamp activities with the workflow's tenant, check it on run."""

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _ActivityGuard(next)

    def workflow_interceptor_class(
        self, input: WorkflowInterceptorClassInput
    ) -> type[WorkflowInboundInterceptor]:
        return _WorkflowStamp


class _WorkflowStamp(WorkflowInboundInterceptor):
    def init(self, outbound: WorkflowOutboundInterceptor) -> None:
        super().init(_StampActivities(outbound))


class _StampActivities(WorkflowOutboundInterceptor):
    def start_activity(self, input: StartActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = _stamped(input.headers)
        return super().start_activity(input)

    def start_local_activity(self, input: StartLocalActivityInput) -> workflow.ActivityHandle[Any]:
        input.headers = _stamped(input.headers)
        return super().start_local_activity(input)


def _stamped(headers: Any) -> Any:
    tenant = workflow.info().typed_search_attributes.get(TENANT_ATTRIBUTE)
    if tenant is None:
        return headers
    return {**headers, TENANT_HEADER: default().payload_converter.to_payloads([tenant])[0]}


class _ActivityGuard(ActivityInboundInterceptor):
    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        stamped: Payload | None = input.headers.get(TENANT_HEADER)
        if stamped is not None:
            tenant = default().payload_converter.from_payloads([stamped])[0]
            other = next((t for t in named_tenants(input.args) if t != tenant), None)
            if other is not None:
                raise to_application_error(
                    ForgeError(
                        f"activity refused: its input acts for tenant {other!r} but its "
                        f"workflow runs for tenant {tenant!r}",
                        code=ErrorCode.TENANT_MISMATCH,
                    )
                )
        return await super().execute_activity(input)


def named_tenants(value: Any, depth: int = 0) -> Iterator[str]:
    """Every tenant `value` names: Scope.tenant and `tenant_id` fields, through models and lists.

    Plans and other payloads hold no tenant below a few levels; the walk stops at depth 4.
    """
    if depth > 4:
        return
    if isinstance(value, Scope):
        yield value.tenant
    elif isinstance(value, BaseModel):
        tenant_id = getattr(value, "tenant_id", None)
        if isinstance(tenant_id, str):
            yield tenant_id
        for name in type(value).model_fields:
            field = getattr(value, name)
            if isinstance(field, BaseModel | list | tuple):
                yield from named_tenants(field, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from named_tenants(item, depth + 1)
