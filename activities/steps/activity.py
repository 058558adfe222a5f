"""step__execute and step__usage: the Temporal side of a step; the harness does the work."""

import time
from collections.abc import Mapping
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

from activities import telemetry_metrics
from activities.errors import step_failure
from activities.harness.attempt import StepServices
from activities.harness.codeact_session import ModelServices
from activities.harness.failure import StepFailure
from activities.harness.ledger import recorded_usage
from activities.harness.lifecycle import execute_attempt
from activities.net.outbound import OutboundClient
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.steps.plans import CompiledPlans
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from activities.store.skills_registry import SkillRegistry
from compiler.typesystem.library import TypeLibrary
from schemas import names
from schemas.budget import Usage
from schemas.context import ContextPack
from schemas.run import StepExecuteInput, StepExecuteResult, StepUsageInput


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
        runtime_root: Path = RUNTIME_DIR,
    ) -> None:
        self._services = StepServices(
            artifacts=artifacts,
            events=events,
            library=library,
            models=models,
            registry=registry,
            packs=dict(packs if packs is not None else models.packs if models else {}),
            outbound=outbound if outbound is not None else OutboundClient(),
            runtime_root=runtime_root,
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
        """One attempt through the harness (activities/harness/lifecycle.py)."""
        started = time.monotonic()
        try:
            plan = self._plans.get(inp.scope, inp.compiled_ref)
            result = execute_attempt(
                inp, plan, activity.info().attempt, self._services, self._runs_dir
            )
        except ApplicationError as failed:
            # A failed attempt's type is its failure class (activities/errors.py): bounded.
            seconds = time.monotonic() - started
            telemetry_metrics.step_attempt(inp.scope.tenant, "failed", failed.type, seconds)
            raise
        seconds = time.monotonic() - started
        telemetry_metrics.step_attempt(inp.scope.tenant, "completed", None, seconds)
        return result
