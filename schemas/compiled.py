"""Pass C–E output: frozen step contracts, dispatch packets, the compiled plan (seed 000 §5.4)."""

from typing import Any, Literal

from pydantic import Field

from schemas.base import FrozenModel
from schemas.budget import StepProjection
from schemas.plan import ArtifactContract, ParameterDecl, ResolvedStep, RunInputDecl
from schemas.profile import ExecutionProfileSnapshot
from schemas.typesystem import RepairPolicy

Backend = Literal["sandbox.frozen", "sandbox.session", "evaluator", "gate", "child_workflow"]
ExecutionMode = Literal["code", "evaluate", "gate", "adapter", "recipe"]
RANK_NAMES = {
    1: "exact",
    2: "same_entity_acceptable_kind",
    3: "same_entity_adapter",
    4: "generic_compatible",
}


class BindingSource(FrozenModel):
    """Where a bound input comes from."""

    type: Literal["step", "run_input"]
    step_key: str | None = None
    slot: str | None = None
    path: str


class SlotBinding(FrozenModel):
    """One input slot bound to its producer with the rank of seed 000 §4.6 (1 best, 4 generic)."""

    slot: str
    path: str
    required: bool
    entity_schema_id: str | None
    kind_key: str
    profile_id: str | None = None
    source: BindingSource
    rank: Literal[1, 2, 3, 4]
    rank_name: str
    adapter_id: str | None = None
    adapter_step_key: str | None = None


class ContractIO(FrozenModel):
    slot: str
    path: str
    kind_key: str
    entity_schema_id: str | None = None
    required: bool = True


class CompiledStepContractV1(FrozenModel):
    inputs: list[ContractIO]
    outputs: list[ContractIO]


class ExecutionPolicy(FrozenModel):
    repair_strategy: str
    max_retries: int
    retryable_failure_classes: list[str]
    immutable_output_bindings: bool


class ExecutableContract(FrozenModel):
    """The executable attempt contract: what the harness enforces, byte for byte."""

    step_key: str
    kind: str
    backend: Backend
    step_inputs: list[ContractIO]
    step_outputs: list[ContractIO]
    read_paths: list[str]
    write_paths: list[str]
    scratch_prefix: str
    validators: list[str]
    execution_policy: ExecutionPolicy
    code_sha256: str | None = None
    adapter_id: str | None = None


class CompiledStep(ResolvedStep):
    """A step after Pass C (and D): frozen contract sealed by contract_hash."""

    step_id: str
    inserted_by_compiler: bool = False
    bindings: list[SlotBinding] = Field(default_factory=list)
    compiled_step_contract_v1: CompiledStepContractV1
    resolved_artifact_contracts: dict[str, ArtifactContract]
    repair_policy: RepairPolicy
    executable_contract_v2: ExecutableContract
    backend: Backend
    adapter_id: str | None = None
    # Pass D
    allowed_tool_ids: list[str] = Field(default_factory=list)
    recommended_skill_ids: list[str] = Field(default_factory=list)
    execution_mode: ExecutionMode | None = None
    # `invoke skill:` (Pass D): the bound skill's version and output schema, sealed in the hash.
    skill_sha256: str | None = None
    skill_output_schema: dict[str, Any] | None = None
    # Every bound skill's package digest (Pass D), so a changed package never runs unnoticed.
    skill_digests: dict[str, str] = Field(default_factory=dict)
    contract_hash: str


class IOContract(FrozenModel):
    read_paths: list[str]
    write_paths: list[str]


class ExecutionContract(FrozenModel):
    pattern: str
    backend: Backend
    tool_budget: int
    bridge_call_budget: int
    timeout_s: int
    repair_strategy: str
    max_retries: int
    projected: StepProjection = StepProjection()


class SkillBinding(FrozenModel):
    skill_id: str


class MaterializedSkillPackage(FrozenModel):
    skill_id: str
    paths: list[str]


class DispatchPacket(FrozenModel):
    """What the executor receives for one step (seed 000 §5.6)."""

    step_key: str
    step_id: str
    contract_hash: str
    profile_snapshot_hash: str
    io_contract: IOContract
    execution_contract: ExecutionContract
    artifact_contracts: dict[str, ArtifactContract]
    skill_bindings: list[SkillBinding] = Field(default_factory=list)
    materialized_skill_packages: list[MaterializedSkillPackage] = Field(default_factory=list)


class GateSpec(FrozenModel):
    """A human decision the run waits for; bound to the gated steps' contract hashes."""

    gate_id: str
    gated_step_keys: list[str]
    contract_hash: str = Field(
        description="the gated step's contract hash (or, for a deduplicated gate, the hash of "
        "the sorted contract hashes of all its steps)"
    )
    approver_role: str
    prompt: str
    evidence: list[str]
    deadline_s: int | None = None
    on_timeout: Literal["reject", "escalate"] = "reject"
    escalate_to_role: str | None = None
    dedupe_key: str
    reminder_interval_s: int | None = None
    reason: str


class CompiledPlan(FrozenModel):
    """The whole compiled run: contracts in topological order, frozen profile, packets."""

    schema_version: Literal["forge.compiled/1"] = "forge.compiled/1"
    mission: str
    run_inputs: list[RunInputDecl]
    parameters: list[ParameterDecl] = Field(default_factory=list)
    steps: list[CompiledStep]
    library_snapshot_hash: str
    plan_hash: str
    profile_snapshot: ExecutionProfileSnapshot
    dispatch_packets: list[DispatchPacket]
    gates: list[GateSpec] = Field(default_factory=list)
    warnings: list[str] = Field(default_factory=list)


class ContractPlan(FrozenModel):
    """Pass C/D output: every step sealed by its contract hash, before the profile freeze."""

    schema_version: Literal["forge.contracts/1"] = "forge.contracts/1"
    mission: str
    run_inputs: list[RunInputDecl]
    parameters: list[ParameterDecl] = Field(default_factory=list)
    steps: list[CompiledStep]
    library_snapshot_hash: str
    plan_hash: str
    warnings: list[str] = Field(default_factory=list)
