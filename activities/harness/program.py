"""Running a program in the sandbox: frozen code or a library adapter, and how it failed.

Harness step 6 for code the platform already holds. Model-written programs run through the
same `launch` and `program_failure` (codeact_session.HarnessSession), one per Code-Act turn.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from activities.harness.failure import StepFailure
from activities.masked_output import clipped
from activities.sandbox.runner import (
    SandboxBusy,
    SandboxLimits,
    SandboxResult,
    SandboxUnavailable,
    run_sandboxed,
)
from activities.sandbox.step_runtime import RUNTIME_DIR
from schemas.compiled import CompiledStep
from schemas.error_codes import ErrorCode
from schemas.profile import SandboxPolicy

STEP_SCRIPT = "meta/step.py"
STDERR_SHOWN = 8000  # characters of a failed program's stderr kept (its last 5 lines, masked first)


@dataclass(frozen=True)
class Executor:
    """How to run a step's code: the argv inside the sandbox and the files it needs in meta/."""

    argv: list[str]
    files: Mapping[str, bytes]


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


def run_program(
    workspace: Path,
    executor: Executor,
    policy: SandboxPolicy,
    heartbeat: Callable[[], None] | None = None,
    skills: Mapping[str, Path] | None = None,
    bridge: bool = False,
    timeout_s: float | None = None,
    runtime_root: Path = RUNTIME_DIR,
) -> SandboxResult:
    """Run frozen code; any failure of the program fails the attempt."""
    result = launch(
        workspace,
        executor,
        policy,
        heartbeat,
        skills,
        bridge,
        timeout_s,
        runtime_root=runtime_root,
    )
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
    *,
    runtime_root: Path = RUNTIME_DIR,
) -> SandboxResult:
    """Run a program in the sandbox; only a sandbox that cannot run at all raises.

    With `bridge`, the caller serves a BridgeServer on meta/bridge.sock for the program.
    `timeout_s` is the step's own timeout (its execution contract's), which sets the wall
    clock and the CPU limits; the profile's wall clock when None. `runtime_root` is the
    worker's sealed step runtime (FORGE_STEP_RUNTIME).

    A step's code always runs in bubblewrap: a profile whose sandbox says `isolation: none`
    is refused here, so no worker ever runs step code unsandboxed (run_sandboxed keeps "none"
    for callers that run their own code, such as the sandbox's own tests).
    """
    if policy.isolation != "bwrap":
        raise StepFailure(
            ErrorCode.POLICY_BLOCKED,
            f"the execution profile's sandbox.isolation is {policy.isolation!r}, and a worker "
            "runs step code only in bubblewrap: set `sandbox.isolation: bwrap` in the profile "
            "(docs/security.md#sandboxes-in-containers)",
        )
    for rel, data in executor.files.items():
        (workspace / rel).write_bytes(data)
    try:
        return run_sandboxed(
            executor.argv,
            workspace=workspace,
            limits=SandboxLimits.for_step(policy, timeout_s or policy.wall_clock_s),
            skills=dict(skills or {}),
            isolation="bwrap",
            heartbeat=heartbeat,
            bridge=bridge,
            runtime_root=runtime_root,
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
        tail = clipped(result.stderr.strip(), STDERR_SHOWN, "failure", keep="tail", lines=5)
        return StepFailure(
            ErrorCode.CODE_ERROR, f"exit {result.exit_code}: " + " | ".join(tail.splitlines())
        )
    return None
