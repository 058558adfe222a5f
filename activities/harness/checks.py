"""What the platform checks around the program: the receipts, inputs, outputs and writes.

Harness steps 4-5 (the preflight receipt; required inputs present and parsing; the inputs free
of credentials, per the profile's step_input phase) and 7-8 (the postflight receipt; declared
outputs present, non-empty, parsing, free of placeholders and, for an `invoke skill:` step,
matching the skill's schema; nothing written outside them and no input changed; the outputs
free of credentials, per the step_output phase). Each check raises StepFailure; none trusts
the step's own word.
"""

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from jsonschema import Draft202012Validator

from activities.harness.failure import StepFailure
from activities.harness.guard_files import blocked_message, phase_mode, scan_files
from activities.harness.receipts import build_receipt, hash_file
from activities.sandbox.workspace import WorkspaceViolation, safe_read, safe_walk
from schemas.compiled import CompiledStep
from schemas.error_codes import ErrorCode
from schemas.guard import FileFinding, GuardPhase
from schemas.plan import ArtifactContract
from schemas.profile import ExecutionProfile
from schemas.receipts import Receipt

SKILL_OUTPUT_MAX = 32 * 1024 * 1024


# 4. Preflight receipt
def preflight(workspace: Path, step: CompiledStep) -> Receipt:
    # Inputs carry no artifact contract of this step: their kind comes from the extension.
    files = [(p, None) for p in step.executable_contract_v2.read_paths]
    return _receipt(workspace, step, "preflight", files)


# 5. Verify required inputs
def verify_inputs(receipt: Receipt, step: CompiledStep) -> None:
    required = {b.path for b in step.bindings if b.required} | set(step.input_file_paths)
    for f in receipt.files:
        if f.path not in required:
            continue
        if not f.exists:
            raise StepFailure(ErrorCode.MISSING_INPUT, f"required input {f.path} is not on disk")
        if f.parse_validation is not None and not f.parse_validation.ok:
            raise StepFailure(
                ErrorCode.CONTRACT_VIOLATION,
                f"input {f.path} does not parse: {f.parse_validation.error}",
            )


# 7. Postflight receipt
def postflight(workspace: Path, step: CompiledStep) -> Receipt:
    files = [
        (p, step.resolved_artifact_contracts.get(p))
        for p in step.executable_contract_v2.write_paths
    ]
    return _receipt(workspace, step, "postflight", files)


def _receipt(
    workspace: Path,
    step: CompiledStep,
    phase: Literal["preflight", "postflight"],
    files: Sequence[tuple[str, ArtifactContract | None]],
) -> Receipt:
    return build_receipt(
        workspace,
        files,
        step_id=step.step_id,
        step_key=step.step_key,
        contract_hash=step.contract_hash,
        phase=phase,
    )


# 8. Verify expected outputs
def verify_outputs(receipt: Receipt, step: CompiledStep) -> None:
    """Every declared output exists, is non-empty, parses, and carries no placeholder."""
    check_placeholders = "outputs.no_placeholders" in step.executable_contract_v2.validators
    problems = []
    for f in receipt.files:
        if not f.exists:
            problems.append(f"{f.path} was not written")
        elif not f.size_bytes:
            problems.append(f"{f.path} is empty")
        elif f.parse_validation is not None and not f.parse_validation.ok:
            problems.append(f"{f.path}: {f.parse_validation.error}")
        elif check_placeholders and f.placeholder_sentinels:
            problems.append(f"{f.path} has placeholders: {', '.join(f.placeholder_sentinels)}")
    if problems:
        raise StepFailure(ErrorCode.OUTPUT_SHAPE, "; ".join(problems))


# 8a'. An `invoke skill:` step's JSON outputs must match the skill's declared output schema
def verify_skill_output(workspace: Path, step: CompiledStep) -> None:
    """Validate every JSON output against the bound skill's schema (seed 004 §4.3)."""
    schema = step.skill_output_schema
    if schema is None:
        return
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    problems = []
    for path in step.executable_contract_v2.write_paths:
        if not path.endswith(".json"):
            continue
        try:
            document = json.loads(safe_read(workspace, path, SKILL_OUTPUT_MAX))
        except (WorkspaceViolation, ValueError, FileNotFoundError) as exc:
            problems.append(f"{path}: {exc}")
            continue
        for err in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path))[:5]:
            where = "$" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in err.absolute_path
            )
            problems.append(f"{path} at {where}: {err.message}")
    if problems:
        raise StepFailure(
            ErrorCode.SKILL_OUTPUT_INVALID,
            f"output does not match skill {step.invoke_skill}'s schema: " + "; ".join(problems),
        )


# 8b. Refuse writes to undeclared paths outside work/, and changes to the inputs
def check_undeclared_writes(workspace: Path, step: CompiledStep, preflight: Receipt) -> None:
    declared = set(step.executable_contract_v2.write_paths)
    inputs = {f.path: f.sha256 for f in preflight.files if f.exists}
    try:
        written = safe_walk(workspace, "output")
    except WorkspaceViolation as exc:
        raise StepFailure(ErrorCode.CONTRACT_VIOLATION, str(exc)) from exc
    extra = sorted(set(written) - declared - set(inputs))
    if extra:
        raise StepFailure(
            ErrorCode.CONTRACT_VIOLATION,
            f"wrote undeclared paths {', '.join(extra)}; only {', '.join(sorted(declared))} "
            "and work/ are writable",
        )
    for path, sha in sorted(inputs.items()):
        if not path.startswith(("input/", "output/")):
            continue
        try:
            now, _ = hash_file(workspace / path)
        except (OSError, ValueError) as exc:
            raise StepFailure(
                ErrorCode.CONTRACT_VIOLATION, f"input {path} was removed or replaced: {exc}"
            ) from exc
        if now != sha:
            raise StepFailure(
                ErrorCode.CONTRACT_VIOLATION, f"modified its input {path}; inputs are read-only"
            )


# 5a and 8c. The guard: credentials in the inputs (step_input) and the outputs (step_output)
def guard_files(
    workspace: Path,
    step: CompiledStep,
    profile: ExecutionProfile,
    receipt: Receipt,
    phase: GuardPhase,
) -> list[FileFinding]:
    """The credentials in the receipt's files, to report; POLICY_BLOCKED if the phase blocks."""
    mode = phase_mode(profile, phase)
    if mode == "off":
        return []
    contracts = step.resolved_artifact_contracts if phase == "step_output" else {}
    found = scan_files(
        workspace, [(f.path, contracts.get(f.path)) for f in receipt.files if f.exists]
    )
    if found and mode == "block":
        raise StepFailure(ErrorCode.POLICY_BLOCKED, blocked_message(step.step_key, phase, found))
    return found
