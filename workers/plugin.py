"""The one Temporal plugin every Forge process uses: worker, CLI, API and tests."""

import dataclasses
from collections.abc import Callable, Sequence

import pydantic
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.plugin import SimplePlugin
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from activities.errors import ForgeFailureConverter
from schemas.errors import ForgeError
from workflows.run import CompiledRunWorkflow

# Modules the workflow sandbox may share with the host instead of re-importing per run.
PASSTHROUGH_MODULES = (
    "pydantic",  # models are immutable data; re-importing per workflow run is slow
    "pydantic_core",  # pydantic's compiled core
    "annotated_types",  # pydantic's constraint types
    "schemas",  # frozen pydantic models only: no I/O, no clock
    "rfc8785",  # pure canonical-JSON encoding
)

WORKFLOWS: tuple[type, ...] = (CompiledRunWorkflow,)


class ForgePlugin(SimplePlugin):
    """Pydantic payloads, Forge's workflows, sandbox passthrough and failure types."""

    def __init__(self, activities: Sequence[Callable[..., object]] | None = None) -> None:
        super().__init__(
            "forge",
            data_converter=dataclasses.replace(
                pydantic_data_converter, failure_converter_class=ForgeFailureConverter
            ),
            workflows=list(WORKFLOWS),
            activities=list(activities) if activities is not None else None,
            workflow_runner=SandboxedWorkflowRunner(
                restrictions=SandboxRestrictions.default.with_passthrough_modules(
                    *PASSTHROUGH_MODULES
                )
            ),
            # A payload that fails validation inside workflow code fails the same way on
            # every replay: fail the workflow instead of retrying its task forever. A ForgeError
            # is a failure Forge named (a refused plan, a failed sub-recipe): it fails the
            # workflow too, and the failure converter turns it into its ApplicationError.
            workflow_failure_exception_types=[pydantic.ValidationError, ForgeError],
        )
