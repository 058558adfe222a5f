"""The one Temporal plugin every Forge process uses: worker, CLI, API and tests."""

import dataclasses
import inspect
import typing
from collections.abc import Callable, Sequence
from typing import Any

import pydantic
import temporalio.activity
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkerConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.errors import ForgeFailureConverter
from schemas.errors import RunFailure
from workers.process.tenant_guard import TenantGuard
from workers.telemetry import tracing
from workflows.operations import OPERATIONS, Operation
from workflows.run import CompiledRunWorkflow
from workflows.scheduled_capsule import ScheduledCapsuleWorkflow
from workflows.webhooks import WebhookDeliveryWorkflow

# Modules the workflow sandbox may share with the host instead of re-importing per run.
PASSTHROUGH_MODULES = (
    "pydantic",  # models are immutable data; re-importing per workflow run is slow
    "pydantic_core",  # pydantic's compiled core
    "annotated_types",  # pydantic's constraint types
    "schemas",  # frozen pydantic models only: no I/O, no clock
    "rfc8785",  # pure canonical-JSON encoding
)

# ... and, with telemetry on, the OpenTelemetry API the SDK's workflow interceptor records with:
# its context and the replay-safe provider are the host's (the SDK's OpenTelemetryPlugin's rule).
TRACED_PASSTHROUGH = ("opentelemetry",)

WORKFLOWS: tuple[type, ...] = (
    CompiledRunWorkflow,
    ScheduledCapsuleWorkflow,
    WebhookDeliveryWorkflow,
)


def activities_of(*holders: object) -> list[Callable[..., object]]:
    """Every @activity.defn method of these activity classes' instances, bound."""
    found: list[Callable[..., object]] = []
    for holder in holders:
        for attr, fn in inspect.getmembers(type(holder), inspect.isfunction):
            if temporalio.activity._Definition.from_callable(fn):
                found.append(getattr(holder, attr))
    return found


def registered(
    implementations: Sequence[Callable[..., object]] | None,
) -> Sequence[Callable[..., object]]:
    """A Forge worker's activities, registered from the operations table (workflows/operations.py).

    Each operation has exactly one implementation, which takes the operation's input model and
    returns its result model; an implementation the table does not name is refused. A history
    names its activities, so a worker answers to every one of them. A worker that registers no
    activities (workflows only) passes.
    """
    if not implementations:
        return []
    by_name: dict[str, Callable[..., object]] = {}
    for fn in implementations:
        name = activity_definition_name(fn)
        if name in by_name:
            raise RuntimeError(f"two implementations of activity {name}: register one")
        by_name[name] = fn
    table = {op.name: op for op in OPERATIONS}
    missing = ", ".join(sorted(set(table) - set(by_name))) or "none"
    unknown = ", ".join(sorted(set(by_name) - set(table))) or "none"
    if missing != "none" or unknown != "none":
        raise RuntimeError(
            f"the worker's activities differ from the operations table (missing: {missing}; "
            f"not in the table: {unknown}): add a new activity to workflows/operations.py and "
            "its name to schemas/names.py, never drop one"
        )
    for op in OPERATIONS:
        _check_types(op, by_name[op.name])
    return [by_name[op.name] for op in OPERATIONS]


def _check_types(op: Operation[Any, Any], fn: Callable[..., object]) -> None:
    """The implementation takes the operation's input model and returns its result model."""
    hints = typing.get_type_hints(fn)
    params = [p for p in inspect.signature(fn).parameters if p != "self"]
    given = hints.get(params[0]) if len(params) == 1 else None
    if given is not op.input or hints.get("return") is not op.result:
        raise RuntimeError(
            f"activity {op.name} is implemented by {fn.__qualname__}({given} -> "
            f"{hints.get('return')}), but the operations table says {op.input.__name__} -> "
            f"{op.result.__name__}: make them agree"
        )


def activity_definition_name(fn: Callable[..., object]) -> str:
    """The Temporal name an @activity.defn function is registered under."""
    # The SDK keeps the definition on the function; this is how its Worker reads it too.
    definition = temporalio.activity._Definition.must_from_callable(fn)
    assert definition.name is not None
    return definition.name


def _tracing_interceptors() -> list[Any]:
    # The SDK's OpenTelemetry support loads only when a process records (telemetry on).
    from temporalio.contrib.opentelemetry import OpenTelemetryInterceptor

    from workers.telemetry.run_attributes import RunClientAttributes

    # The SDK's first, so its StartWorkflow span is current when ours names it.
    return [OpenTelemetryInterceptor(add_temporal_spans=True), RunClientAttributes()]


class ForgePlugin(SimplePlugin):
    """Pydantic payloads, Forge's workflows, sandbox passthrough and failure types."""

    def __init__(self) -> None:
        # Telemetry on (the process installed a tracer provider, workers/telemetry/tracing.py):
        # the Temporal SDK's OpenTelemetry support, for the client and every worker of it, so
        # the workflow and each activity attempt are spans of the run's trace. Off: nothing.
        traced = tracing.installed()
        passthrough = (*PASSTHROUGH_MODULES, *TRACED_PASSTHROUGH) if traced else PASSTHROUGH_MODULES
        self._traced = traced
        super().__init__(
            "forge",
            data_converter=dataclasses.replace(
                pydantic_data_converter, failure_converter_class=ForgeFailureConverter
            ),
            workflows=list(WORKFLOWS),
            activities=registered,  # a worker's activities, from the operations table
            workflow_runner=SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(*passthrough)
            ),
            # A payload that fails validation inside workflow code fails the same way on
            # every replay: fail the workflow instead of retrying its task forever. A RunFailure
            # is a failure the workflow decided on (a refused plan, no planner): it fails the
            # workflow too, and the failure converter turns it into its ApplicationError. Any
            # other ForgeError fails the task only (retried: a redeploy can still finish it).
            workflow_failure_exception_types=[pydantic.ValidationError, RunFailure],
            # Temporal spans (StartWorkflow, RunWorkflow, StartActivity, RunActivity) on: they
            # are the trace's shape (docs/observability.md).
            interceptors=_tracing_interceptors() if traced else None,
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """The base configuration, and the tenant guard on every Forge worker.

        Added here rather than as SimplePlugin's `interceptors`: those are shared with the
        client, and the guard is a worker's alone (workers/process/tenant_guard.py).
        """
        config = super().configure_worker(config)
        # RunAttributes after the SDK's tracing interceptor (a client's come first): inside its
        # spans, so it names them.
        added: list[Any] = [TenantGuard()]
        if self._traced:
            from workers.telemetry.run_attributes import RunAttributes  # loads the SDK: on only

            added.append(RunAttributes())
        config["interceptors"] = [*config.get("interceptors", []), *added]
        return config
