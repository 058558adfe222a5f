"""Pass C sub-step 6: adapters become visible steps with their own contracts."""

from compiler.plan.contracts.bindings import AdapterRequest
from compiler.typesystem.library import TypeLibrary
from schemas.plan import AbstractInput, AbstractOutput, ExpectedOutput, ResolvedStep

ADAPTER_WORKFLOW = "normalize-transform"


def adapter_key_base(req: AdapterRequest) -> str:
    """A readable key: producer, the artifact's name, target kind (deduplicated by the caller)."""
    origin = req.producer.step_key or "input"
    name = req.producer.path.split("/", 1)[1].split(".", 1)[0].replace("/", "_")
    return f"adapt-{origin}-{name}-to-{req.adapter.to_kind.replace('.', '_')}"


def adapter_output_path(key: str, to_kind: str, lib: TypeLibrary) -> str:
    return f"work/adapters/{key}{lib.kinds[to_kind].extensions[0]}"


def adapter_step(
    req: AdapterRequest, key: str, consumer: ResolvedStep, lib: TypeLibrary
) -> ResolvedStep:
    """The inserted step: reads the producer's artifact, writes the adapted one."""
    p = req.producer
    out = adapter_output_path(key, req.adapter.to_kind, lib)
    workflows = [ADAPTER_WORKFLOW] if ADAPTER_WORKFLOW in lib.workflow_packs else []
    return ResolvedStep(
        step_key=key,
        label=f"Adapt {req.slot} from {req.adapter.from_kind} to {req.adapter.to_kind}",
        objective=(
            f"Convert {p.path} ({p.entity_schema_id or 'generic'}, {req.adapter.from_kind}) "
            f"to {req.adapter.to_kind} with {req.adapter.adapter_id}."
        ),
        depends_on=[p.step_key] if p.step_key else [],
        input_file_paths=[p.path],
        expected_outputs=[ExpectedOutput(path=out, role="adapted")],
        success_criteria=f"{out} exists and parses as {req.adapter.to_kind}",
        abstract_inputs=[
            AbstractInput(
                slot=req.slot,
                entity_schema_id=p.entity_schema_id,
                accepted_kind_keys=[req.adapter.from_kind],
                path=p.path,
            )
        ],
        abstract_outputs=[
            AbstractOutput(
                slot=req.slot,
                entity_schema_id=p.entity_schema_id,
                preferred_kind_keys=[req.adapter.to_kind],
                path=out,
            )
        ],
        kind="adapter",
        domain_pack_ids=list(consumer.domain_pack_ids),
        workflow_pack_ids=workflows,
        policy_profile_id=consumer.policy_profile_id,
        resolution_status="resolved",
        confidence=1.0,
        reason=(
            f"inserted by the compiler: {req.adapter.adapter_id} bridges {req.adapter.from_kind} "
            f"to {req.adapter.to_kind} for {req.consumer_key}"
        ),
    )
