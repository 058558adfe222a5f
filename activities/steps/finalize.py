"""run__finalize: the final-output check and the run's last event."""

from datetime import UTC, datetime

from temporalio import activity

from activities.steps.plans import CompiledPlans
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from schemas import names
from schemas.event_catalogue import RUN_COMPLETED, RUN_FAILED, payload_of
from schemas.event_ids import event_id, stream_id
from schemas.events import EventDraft
from schemas.run import FinalizeInput, FinalizeResult
from schemas.run_events import RunCompleted, RunCost, RunFailed


class FinalizeActivities:
    """Ends a run: every output published and intact, then run.completed (or run.failed)."""

    def __init__(self, artifacts: ArtifactStore, events: EventStore, plans: CompiledPlans) -> None:
        self._artifacts = artifacts
        self._events = events
        self._plans = plans

    @activity.defn(name=names.RUN_FINALIZE)
    def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        """Final-output check (every output published and intact) and the run.completed event."""
        plan = self._plans.get(inp.scope, inp.compiled_ref)
        published = {
            (p.path, p.sha256)
            for p in self._events.list_published(inp.run_id, tenant_id=inp.scope.tenant)
        }
        problems = [
            f"{ref.path} was not published"
            for ref in inp.outputs
            if (ref.path, ref.sha256) not in published
        ]
        problems += [
            f"{ref.path} is missing from the artifact store"
            for ref in inp.outputs
            if not self._artifacts.exists(inp.scope, ref.sha256)
        ]
        type_ = RUN_FAILED if problems else RUN_COMPLETED
        cost = RunCost(input_tokens=0, output_tokens=0, usd=0.0)
        payload = (
            RunFailed(plan_hash=plan.plan_hash, problems=problems, outputs=inp.outputs, cost=cost)
            if problems
            else RunCompleted(
                plan_hash=plan.plan_hash, problems=problems, outputs=inp.outputs, cost=cost
            )
        )
        self._events.append(
            [
                EventDraft(
                    event_id=event_id(inp.run_id, type_),
                    type=type_,
                    scope=inp.scope,
                    run_id=inp.run_id,
                    caused_by=inp.cause_event_id,
                    timestamp=inp.finished_at or datetime.now(UTC),
                    payload=payload_of(type_, payload),
                )
            ],
            stream_id=stream_id(inp.run_id, "run"),
        )
        return FinalizeResult(published=inp.outputs, problems=problems)
