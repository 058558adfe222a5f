"""Resuming a run: a new run of its plan and inputs that may reuse its verified steps."""

import json
from typing import Any

from temporalio.client import Client
from temporalio.service import RPCError

from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from compiler.run.sources import objective_of, plan_ref_of
from schemas.artifacts import ArtifactRef
from schemas.compiled import CompiledPlan
from schemas.error_codes import ErrorCode
from schemas.event_catalogue import (
    RUN_TAGGED,
    STEP_COMPLETED,
    STEP_REUSED,
    STEP_STARTED,
    read_payload,
)
from schemas.run import RunInput
from schemas.run_events import RunTagged
from schemas.run_source import ResumeSource, ReusableStep
from schemas.step_events import StepCompleted, StepReused, StepStarted
from workers.services.runs import PlanFileError, new_run_id


def _seeded_plan(services: Any, run_id: str, tenant: str) -> ArtifactRef | None:
    """The recipe-built plan of a run started from an objective (its run.tagged.v1 event)."""
    for e in services.events.list_events(run_id=run_id, type=RUN_TAGGED, tenant_id=tenant):
        tagged = read_payload(e.type, e.payload)
        if isinstance(tagged, RunTagged) and tagged.plan_ref is not None:
            return tagged.plan_ref
    return None


async def resume_input(
    client: Client, services: Any, run_id: str, from_step: str | None, ctx: Any
) -> tuple[RunInput, CompiledPlan]:
    """A new run of RUN's plan and inputs that may reuse RUN's completed steps, and that plan.

    `from_step` forces that step and everything downstream of it to run again. The plan comes
    back compiled so that the caller can tell what its steps need (a model worker, or none).
    """
    handle = client.get_workflow_handle(run_id)
    try:
        history = await handle.fetch_history()
    except RPCError as exc:
        raise PlanFileError(
            f"no run {run_id!r}: {exc.message}",
            code=ErrorCode.NOT_FOUND,
            hint="list runs with `forge runs`",
        ) from None
    started = history.events[0].workflow_execution_started_event_attributes
    [old] = await client.data_converter.decode(started.input.payloads, [RunInput])
    if not isinstance(old, RunInput):
        raise PlanFileError(
            f"{run_id} is not a Forge run",
            code=ErrorCode.NOT_FOUND,
            hint="list runs with `forge runs`",
        )
    tenant = old.scope.tenant
    plan_ref = plan_ref_of(old.source) or _seeded_plan(services, run_id, tenant)
    if plan_ref is None:
        raise PlanFileError(
            f"{run_id} was started from an objective and never got a plan",
            hint="start it again with `forge run`",
        )
    plan_doc = json.loads(
        services.artifacts.read_bytes(old.scope, plan_ref.sha256, 64 * 1024 * 1024)
    )
    compiled = compile_plan(parse_candidate(plan_doc), ctx=ctx)
    keys = [s.step_key for s in compiled.steps]
    rerun: set[str] = set()
    if from_step is not None:
        if from_step not in keys:
            raise PlanFileError(
                f"--from {from_step!r} is not a step of {run_id}; steps: {', '.join(keys)}",
                code=ErrorCode.USAGE_INVALID,
                hint="give --from one of the steps listed",
            )
        rerun = {from_step}
        for step in compiled.steps:  # topological order: descendants follow their parents
            if rerun & set(step.depends_on):
                rerun.add(step.step_key)
    events = services.events.list_events(run_id=run_id, tenant_id=tenant, limit=1_000_000)
    contract: dict[str, str] = {}
    outputs: dict[str, list[ArtifactRef]] = {}
    for e in events:
        if e.type not in (STEP_STARTED, STEP_COMPLETED, STEP_REUSED):
            continue
        recorded = read_payload(e.type, e.payload)
        if isinstance(recorded, StepStarted | StepReused):
            contract[recorded.step_key] = recorded.contract_hash
        if isinstance(recorded, StepCompleted | StepReused):
            outputs[recorded.step_key] = recorded.outputs
    input_hashes = {
        p.step_key: p.provenance.input_hashes
        for p in services.events.list_published(run_id, tenant_id=tenant)
    }
    reusable = [
        ReusableStep(
            step_key=k,
            contract_hash=contract[k],
            outputs=refs,
            input_hashes=input_hashes.get(k, {}),
        )
        for k, refs in outputs.items()
        if k in contract and k not in rerun
    ]
    source = ResumeSource(
        plan_ref=plan_ref,
        resumed_from=run_id,
        reusable=reusable,
        objective=objective_of(old.source),
    )
    run = old.model_copy(
        update={"run_id": new_run_id(old.scope.tenant), "carry": None, "source": source}
    )
    return run, compiled
