"""The system-owned step harness (seed 000 §6.3): nine steps around the executor."""

import json
import shutil
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from jsonschema import Draft202012Validator

from activities.harness.receipts import build_receipt, hash_file
from activities.sandbox.runner import (
    SandboxBusy,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    WorkspaceViolation,
    run_sandboxed,
    safe_read,
    safe_walk,
)
from activities.store.artifacts import ArtifactCorrupt, ArtifactStore
from activities.store.errors import ArtifactNotFound
from schemas.artifacts import ArtifactRef
from schemas.compiled import CompiledStep
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import ArtifactContract
from schemas.profile import SandboxPolicy
from schemas.receipts import Receipt
from schemas.scope import Scope

WORKSPACE_DIRS = ("input", "work", "output", "meta")
STEP_SCRIPT = "meta/step.py"


class StepFailure(ForgeError):
    """A failed attempt, classified by the failure model of seed 000 §6.5 / Part X-c."""

    message_is_complete = True  # the step's own report; its contract says what to do
    __str__ = ForgeError.line  # `CODE: message`, as before the catalogue

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code


@dataclass(frozen=True)
class Executor:
    """How to run a step's code: the argv inside the sandbox and the files it needs in meta/."""

    argv: list[str]
    files: Mapping[str, bytes]


# 1. Prepare workspace
def prepare_workspace(root: Path) -> Path:
    """A fresh /workspace/{input,work,output,meta} for one attempt (nothing reused)."""
    if root.exists():
        shutil.rmtree(root)
    for sub in WORKSPACE_DIRS:
        (root / sub).mkdir(parents=True)
    return root


# 2. Materialize inputs (and 3. project them at the exact read paths the contract names)
def materialize_inputs(
    workspace: Path,
    step: CompiledStep,
    inputs: Mapping[str, ArtifactRef],
    store: ArtifactStore,
    *,
    scope: Scope,
) -> None:
    """Copy each verified upstream artifact of the scope's tenant to its read path.

    A missing required input fails the step.
    """
    required = {b.path for b in step.bindings if b.required} | set(step.input_file_paths)
    for path in step.executable_contract_v2.read_paths:
        ref = inputs.get(path)
        if ref is None:
            if path in required:
                raise StepFailure(
                    ErrorCode.MISSING_INPUT, f"required input {path} was not provided"
                )
            continue
        dest = workspace / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        try:
            # The workspace lives as long as the attempt: no flush to disk for its copy.
            store.get_to_file(scope, ref.sha256, dest, durable=False)
        except ArtifactCorrupt as exc:
            raise StepFailure(
                ErrorCode.MISSING_INPUT, f"input {path} failed its hash check: {exc}"
            ) from exc
        except ArtifactNotFound as exc:  # never stored for this run's tenant: no retry finds it
            raise StepFailure(
                ErrorCode.MISSING_INPUT, f"input {path} is not in the store: {exc}"
            ) from exc


# 4. Preflight receipt
def preflight(workspace: Path, step: CompiledStep) -> Receipt:
    # Inputs carry no artifact contract of this step: their kind comes from the extension.
    files = [(p, None) for p in step.executable_contract_v2.read_paths]
    return _receipt(workspace, step, "preflight", files)


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


# 6. The executor: frozen code or a library adapter, inside the sandbox
def executor_for(step: CompiledStep, adapter_source: Callable[[str], bytes]) -> Executor:
    """Frozen code or a library adapter (model-written and evaluate steps: codeact_session)."""
    if step.backend == "sandbox.frozen" and step.adapter_id is not None:
        [src] = [b.path for b in step.bindings] or step.input_file_paths
        [dst] = step.executable_contract_v2.write_paths
        return Executor(
            argv=["python", f"/workspace/{STEP_SCRIPT}", src, dst],
            files={STEP_SCRIPT: adapter_source(step.adapter_id)},
        )
    if step.backend == "sandbox.frozen" and step.code is not None:
        return Executor(
            argv=["python", f"/workspace/{STEP_SCRIPT}"],
            files={STEP_SCRIPT: step.code.encode("utf-8")},
        )
    raise StepFailure(
        ErrorCode.EXECUTOR_UNAVAILABLE,
        f"step {step.step_key} has backend {step.backend}, which runs no frozen code: a "
        "sandbox.frozen step needs `code` or a library adapter",
    )


def run_executor(
    workspace: Path,
    executor: Executor,
    policy: SandboxPolicy,
    heartbeat: Callable[[], None] | None = None,
    skills: Mapping[str, Path] | None = None,
    bridge: bool = False,
    timeout_s: float | None = None,
) -> SandboxResult:
    """Run frozen code; any failure of the program fails the attempt."""
    result = launch(workspace, executor, policy, heartbeat, skills, bridge, timeout_s)
    failure = program_failure(result, policy)
    if failure is not None:
        raise failure
    return result


def launch(
    workspace: Path,
    executor: Executor,
    policy: SandboxPolicy,
    heartbeat: Callable[[], None] | None = None,
    skills: Mapping[str, Path] | None = None,
    bridge: bool = False,
    timeout_s: float | None = None,
) -> SandboxResult:
    """Run a program in the sandbox; only a sandbox that cannot run at all raises.

    With `bridge`, the caller serves a BridgeServer on meta/bridge.sock for the program.
    `timeout_s` is the step's own timeout (its execution contract's), which sets the wall
    clock and the CPU limits; the profile's wall clock when None.
    """
    for rel, data in executor.files.items():
        (workspace / rel).write_bytes(data)
    try:
        return run_sandboxed(
            executor.argv,
            workspace=workspace,
            limits=SandboxLimits.for_step(policy, timeout_s or policy.wall_clock_s),
            skills=dict(skills or {}),
            isolation=policy.isolation,
            heartbeat=heartbeat,
            bridge=bridge,
        )
    except SandboxBusy as exc:
        raise StepFailure(ErrorCode.SANDBOX_SESSION_DEAD, str(exc)) from exc
    except SandboxUnavailable as exc:
        raise StepFailure(ErrorCode.POLICY_BLOCKED, str(exc)) from exc


def program_failure(result: SandboxResult, policy: SandboxPolicy) -> StepFailure | None:
    """How a finished program failed (seed 000 §6.5 classes), or None when it exited 0."""
    if result.killed_by == "memory":
        return StepFailure(ErrorCode.SANDBOX_OOM, f"killed: memory limit {policy.memory_mb} MB")
    if result.killed_by in ("wall_clock", "cpu"):
        return StepFailure(ErrorCode.SANDBOX_TIMEOUT, f"killed: {result.killed_by} limit reached")
    if result.killed_by == "file_size":
        return StepFailure(
            ErrorCode.CODE_ERROR, f"killed: file size limit {policy.file_size_mb} MB"
        )
    if result.killed_by is not None:
        return StepFailure(ErrorCode.SANDBOX_SESSION_DEAD, f"sandbox died: {result.killed_by}")
    if result.violations:
        # Planted links or special files in meta/ or output/: the platform refuses the attempt
        # even when the code exited 0.
        return StepFailure(ErrorCode.CONTRACT_VIOLATION, "; ".join(result.violations))
    if result.exit_code != 0:
        tail = result.stderr.strip().splitlines()[-5:]
        return StepFailure(ErrorCode.CODE_ERROR, f"exit {result.exit_code}: " + " | ".join(tail))
    return None


# 7. Postflight receipt
def postflight(workspace: Path, step: CompiledStep) -> Receipt:
    files = [
        (p, step.resolved_artifact_contracts.get(p))
        for p in step.executable_contract_v2.write_paths
    ]
    return _receipt(workspace, step, "postflight", files)


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
SKILL_OUTPUT_MAX = 32 * 1024 * 1024


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


# 9. Persist outputs
def persist_outputs(
    workspace: Path, step: CompiledStep, store: ArtifactStore, *, scope: Scope
) -> list[ArtifactRef]:
    """Store each declared output as an artifact of the scope's tenant."""
    refs = []
    for path in step.executable_contract_v2.write_paths:
        contract = step.resolved_artifact_contracts.get(path)
        refs.append(
            store.put_file(
                scope,
                workspace / path,
                logical_path=path,
                media_type=contract.media_type if contract else None,
            )
        )
    return refs
