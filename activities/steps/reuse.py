"""step__reuse: adopt an earlier run's verified outputs instead of executing a step again."""

from datetime import UTC, datetime

from temporalio import activity

from activities.harness.attempt import step_stream
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from schemas import names
from schemas.artifacts import Provenance
from schemas.event_catalogue import STEP_REUSED, payload_of
from schemas.event_ids import event_id
from schemas.events import EventDraft
from schemas.run import ReuseInput, ReuseResult
from schemas.step_events import StepReused


class ReuseActivities:
    """step__reuse: adopt an earlier run's verified outputs instead of executing a step again."""

    def __init__(self, artifacts: ArtifactStore, events: EventStore) -> None:
        self._artifacts = artifacts
        self._events = events

    @activity.defn(name=names.STEP_REUSE)
    def reuse(self, inp: ReuseInput) -> ReuseResult:
        """Reuse only an unchanged contract on unchanged inputs whose outputs are still intact."""
        step = inp.step
        if step.contract_hash != inp.contract_hash:
            return ReuseResult(reused=False, reason="its contract changed")
        now = {p: r.sha256 for p, r in sorted(inp.inputs.items())}
        if step.input_hashes != now:
            return ReuseResult(reused=False, reason="its inputs changed")
        for ref in step.outputs:
            if not self._artifacts.exists(inp.scope, ref.sha256):
                return ReuseResult(reused=False, reason=f"{ref.path} is gone from the store")
        provenance = Provenance(
            run_id=inp.run_id,
            step_key=step.step_key,
            contract_hash=step.contract_hash,
            input_hashes=now,
            code_hash=None,
            attempt=1,
        )
        for ref in step.outputs:
            self._events.publish_artifact(ref, provenance, tenant_id=inp.scope.tenant)
        self._events.append(
            [
                EventDraft(
                    event_id=event_id(inp.run_id, STEP_REUSED, step.step_key),
                    type=STEP_REUSED,
                    scope=inp.scope,
                    run_id=inp.run_id,
                    caused_by=inp.cause_event_id,
                    timestamp=datetime.now(UTC),
                    payload=payload_of(
                        STEP_REUSED,
                        StepReused(
                            step_key=step.step_key,
                            from_run=inp.resumed_from,
                            contract_hash=step.contract_hash,
                            outputs=step.outputs,
                        ),
                    ),
                )
            ],
            stream_id=step_stream(inp.run_id, step.step_key),
        )
        return ReuseResult(
            reused=True, reason=f"reused from {inp.resumed_from}", outputs=step.outputs
        )
