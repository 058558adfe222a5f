"""Pass C sub-steps 7-9: backend, validators and repair policy, the sealed contract."""

from compiler.hashing import sha256_of, sha256_text
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import (
    Backend,
    CompiledStep,
    CompiledStepContractV1,
    ContractIO,
    ExecutableContract,
    ExecutionPolicy,
    SlotBinding,
)
from schemas.plan import ArtifactContract, ResolvedStep
from schemas.typesystem import RepairPolicy

SCRATCH_PREFIX = "work/"
# What the hash seals: the contract and the step's meaning, never resolution commentary
# (confidence, reason, warnings) nor the positional step_id.
_UNHASHED = {"step_id", "contract_hash", "confidence", "reason", "warnings", "resolution_status"}


_OTHER_BACKENDS: dict[str, Backend] = {
    "evaluate": "evaluator",
    "gate": "gate",
    "recipe": "child_workflow",
}


def choose_backend(step: ResolvedStep) -> Backend:
    """Frozen code runs as is; code without it is written by the executor model at run time."""
    if step.kind == "code":
        return "sandbox.frozen" if step.code else "sandbox.session"
    if step.kind == "adapter":
        return "sandbox.frozen"
    return _OTHER_BACKENDS[step.kind]


def validators_for(
    step: ResolvedStep, contracts: dict[str, ArtifactContract], lib: TypeLibrary
) -> list[str]:
    base = list(lib.policies[step.policy_profile_id].validators)
    per_output = [f"parse:{c.parse_validator}@{p}" for p, c in sorted(contracts.items())]
    return base + per_output


def seal(
    step: ResolvedStep,
    *,
    step_id: str,
    bindings: list[SlotBinding],
    outputs: list[ContractIO],
    contracts: dict[str, ArtifactContract],
    lib: TypeLibrary,
    adapter_id: str | None = None,
    inserted: bool = False,
) -> CompiledStep:
    """Freeze one step: executable contract, repair policy and contract_hash."""
    policy = lib.policies[step.policy_profile_id]
    repair: RepairPolicy = policy.repair
    inputs = [
        ContractIO(
            slot=b.slot,
            path=b.path,
            kind_key=b.kind_key,
            entity_schema_id=b.entity_schema_id,
            required=b.required,
        )
        for b in bindings
    ]
    read_paths = sorted({*(b.path for b in bindings), *step.input_file_paths})
    backend = choose_backend(step)
    code_sha = (
        sha256_text(step.code)
        if step.code
        else (lib.adapters[adapter_id].code_sha256 if adapter_id else None)
    )
    executable = ExecutableContract(
        step_key=step.step_key,
        kind=step.kind,
        backend=backend,
        step_inputs=inputs,
        step_outputs=outputs,
        read_paths=read_paths,
        write_paths=sorted(contracts),
        scratch_prefix=SCRATCH_PREFIX,
        validators=validators_for(step, contracts, lib),
        execution_policy=ExecutionPolicy(
            repair_strategy=repair.strategy,
            max_retries=repair.max_retries,
            retryable_failure_classes=list(repair.retryable_failure_classes),
            immutable_output_bindings=repair.immutable_output_bindings,
        ),
        code_sha256=code_sha,
        adapter_id=adapter_id,
    )
    body = {
        **dict(step),
        "step_id": step_id,
        "inserted_by_compiler": inserted,
        "bindings": bindings,
        "compiled_step_contract_v1": CompiledStepContractV1(inputs=inputs, outputs=outputs),
        "resolved_artifact_contracts": contracts,
        "repair_policy": repair,
        "executable_contract_v2": executable,
        "backend": backend,
        "adapter_id": adapter_id,
        "contract_hash": "",
    }
    return rehash(CompiledStep.model_validate(body))


def rehash(step: CompiledStep) -> CompiledStep:
    """Recompute contract_hash over the sealed fields (used again after Pass D)."""
    sealed = step.model_dump(mode="json", exclude=_UNHASHED)
    return step.model_copy(update={"contract_hash": sha256_of(sealed)})
