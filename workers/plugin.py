"""The one Temporal plugin every Forge process uses: worker, CLI, API and tests."""

import dataclasses
from collections.abc import Callable, Sequence

import pydantic
import temporalio.activity
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker import WorkerConfig
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.errors import ForgeFailureConverter
from schemas import names
from schemas.errors import RunFailure
from workers.process.tenant_guard import TenantGuard
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

WORKFLOWS: tuple[type, ...] = (
    CompiledRunWorkflow,
    ScheduledCapsuleWorkflow,
    WebhookDeliveryWorkflow,
)


def named_activities(
    registered: Sequence[Callable[..., object]] | None,
) -> Sequence[Callable[..., object]]:
    """A Forge worker's activities, checked against the names table (schemas/names.py).

    None missing and none new: a history names its activities, so a worker must answer to
    every one of them. A worker that registers no activities (workflows only) passes.
    """
    if not registered:
        return []
    found = {activity_definition_name(fn) for fn in registered}
    if found != names.ACTIVITIES:
        missing = ", ".join(sorted(names.ACTIVITIES - found)) or "none"
        unknown = ", ".join(sorted(found - names.ACTIVITIES)) or "none"
        raise RuntimeError(
            f"the worker's activities differ from schemas/names.py (missing: {missing}; not in "
            f"the table: {unknown}): add a new activity's name to the table, never drop one"
        )
    return registered


def activity_definition_name(fn: Callable[..., object]) -> str:
    """The Temporal name an @activity.defn function is registered under."""
    # The SDK keeps the definition on the function; this is how its Worker reads it too.
    definition = temporalio.activity._Definition.must_from_callable(fn)
    assert definition.name is not None
    return definition.name


class ForgePlugin(SimplePlugin):
    """Pydantic payloads, Forge's workflows, sandbox passthrough and failure types."""

    def __init__(self) -> None:
        super().__init__(
            "forge",
            data_converter=dataclasses.replace(
                pydantic_data_converter, failure_converter_class=ForgeFailureConverter
            ),
            workflows=list(WORKFLOWS),
            activities=named_activities,  # a worker's activities answer to the names table
            workflow_runner=SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(
                    *PASSTHROUGH_MODULES
                )
            ),
            # A payload that fails validation inside workflow code fails the same way on
            # every replay: fail the workflow instead of retrying its task forever. A RunFailure
            # is a failure the workflow decided on (a refused plan, no planner): it fails the
            # workflow too, and the failure converter turns it into its ApplicationError. Any
            # other ForgeError fails the task only (retried: a redeploy can still finish it).
            workflow_failure_exception_types=[pydantic.ValidationError, RunFailure],
        )

    def configure_worker(self, config: WorkerConfig) -> WorkerConfig:
        """The base configuration, and the tenant guard on every Forge worker.

        Added here rather than as SimplePlugin's `interceptors`: those are shared with the
        client, and the guard is a worker's alone (workers/process/tenant_guard.py).
        """
        config = super().configure_worker(config)
        config["interceptors"] = [*config.get("interceptors", []), TenantGuard()]
        return config
