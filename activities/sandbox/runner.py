"""Runs one step's code in bubblewrap with rlimits, a wall clock and capped output."""

from __future__ import annotations

import errno
import marshal
import os
import re
import shutil
import signal
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from activities.masked_output import clipped
from activities.sandbox import launcher
from activities.sandbox.bwrap import (
    STAGE_DIR,
    Bind,
    bwrap_argv,
    host_path_problem,
    sandbox_identity,
)
from activities.sandbox.client import forge_bridge
from activities.sandbox.limits import MIB, PRLIMIT, SandboxLimits, nproc_argv, rlimits
from activities.sandbox.native import NATIVE_NAME, native_argv, native_launcher
from activities.sandbox.step_runtime import RUNTIME_DIR, StepRuntime, StepRuntimeError, step_runtime
from activities.sandbox.supervise import Outcome, supervise
from activities.sandbox.workspace import (
    WorkspaceViolation,
    chown_tree,
    ensure_layout,
    safe_read,
    safe_walk,
    scan_violations,
)
from activities.telemetry_spans import note_sandbox, sandbox_span
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "BRIDGE_LIB",
    "SandboxLimits",
    "SandboxResult",
    "SandboxUnavailable",
    "WorkspaceViolation",
    "run_sandboxed",
    "safe_read",
    "safe_walk",
]

Isolation = Literal["bwrap", "none"]
_PYTHON_NAMES = frozenset({"python", "python3"})
_SKILL_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_NO_SKILLS: Mapping[str, Path] = MappingProxyType({})
# Python turns a failed allocation under RLIMIT_AS into MemoryError, and ignores SIGXFSZ so an
# oversized write surfaces as OSError EFBIG: both exit 1 with the exception on stderr.
_MEMORY_RE = re.compile(r"(?m)^MemoryError\b")
_FILE_SIZE_RE = re.compile(r"\[Errno 27\]|File too large")
_STDERR_TAIL = 4096
_BUSY = os.strerror(errno.EAGAIN)  # "Resource temporarily unavailable": other sandboxes' load
# Where step code finds the tool bridge's client: the runtime's copy of forge_bridge.py, bound
# read-only here (and put on PYTHONPATH) only for steps that may call tools.
BRIDGE_LIB = "/forge/lib"


class SandboxUnavailable(ForgeError, RuntimeError):
    """The requested isolation cannot be provided on this host; the step must not run."""

    code = ErrorCode.SANDBOX_UNAVAILABLE


class SandboxBusy(SandboxUnavailable):
    """The sandbox user is out of processes right now (EAGAIN): a later attempt may succeed."""

    code = ErrorCode.SANDBOX_BUSY


class SandboxResult(BaseModel):
    """What one sandboxed run did, as observed by the platform."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    exit_code: int | None = Field(description="None when the process died by a signal")
    timed_out: bool
    killed_by: str | None = Field(pattern=r"^(wall_clock|cpu|memory|file_size|signal:\d+)$")
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    violations: list[str] = Field(default_factory=list)
    isolation: Isolation


@dataclass
class _Launch:
    argv: list[str]
    cwd: Path
    stage: dict[str, Any] | None = None
    drop_to: tuple[int, int] | None = None
    env: dict[str, str] = field(default_factory=dict)


def run_sandboxed(
    argv: Sequence[str],
    *,
    workspace: Path,
    limits: SandboxLimits,
    skills: Mapping[str, Path] = _NO_SKILLS,
    isolation: Isolation = "bwrap",
    heartbeat: Callable[[], None] | None = None,
    bwrap: str = "bwrap",
    launcher_impl: Literal["auto", "native", "python"] = "auto",
    bridge: bool = False,
    runtime_root: Path = RUNTIME_DIR,
    span_ids: Mapping[str, str] | None = None,
) -> SandboxResult:
    """Run argv with cwd /workspace under the limits; blocks until it ends or is killed.

    "python" as argv[0] is the sealed step runtime's interpreter (step_runtime.py): Debian's
    Python with only the runtime's locked packages, never the worker's interpreter or venv.
    With `bridge`, the step may call tools: `import forge_bridge` works (PYTHONPATH) and
    FORGE_BRIDGE_SOCKET names meta/bridge.sock, where the caller serves a BridgeServer.
    With bubblewrap, limits.max_processes counts the processes of this sandbox alone (bwrap's
    pid 1 and the step's; limits.nproc_argv says how); with isolation "none", every process of
    the worker's uid. The run is a `sandbox.run` span (activities/telemetry_spans.py) carrying
    `span_ids`, the caller's forge.* attributes (tenant, run, step).

    Raises:
        SandboxUnavailable: isolation is "bwrap" and bwrap is missing or cannot create the
            sandbox on this host; the step runtime is not built or is stale; the workspace
            or a skill lives where its path would tell step code about the host.
        WorkspaceViolation: a workspace subdirectory exists but is not a real directory.
        ValueError: empty argv or an invalid skill id.
    """
    if not argv:
        raise ValueError("argv is empty: nothing to run")
    workspace = workspace.absolute()
    runtime = _runtime(runtime_root, workspace, skills)
    ensure_layout(workspace)
    status: tuple[int, int] | None = None
    if isolation == "bwrap":
        exe = _find_bwrap(bwrap)
        status = os.pipe()
        try:
            launch = _bwrap_launch(
                list(argv), workspace, skills, limits, exe, status[1], bridge, runtime
            )
        except BaseException:
            os.close(status[0])
            os.close(status[1])
            raise
    else:
        launch = _direct_launch(list(argv), workspace, bridge, runtime)
    spec = {
        "argv": launch.argv,
        "env": launch.env,
        "stage": launch.stage,
        "drop_to": launch.drop_to,
        # bwrap mode: RLIMIT_NPROC is set inside the sandbox's user namespace (nproc_argv).
        "rlimits": rlimits(limits, nproc=isolation != "bwrap"),
        # bwrap mode: the launcher stays as a subreaper (see launcher._reap_all).
        "reap": isolation == "bwrap",
        # The launcher dies with the worker that started it (and a sweep finds any survivor).
        "parent_pid": os.getpid(),
    }
    with sandbox_span(span_ids) as span:
        outcome = supervise(
            _launcher_command(launcher_impl),
            spec,
            cwd=launch.cwd,
            wall_clock_s=limits.wall_clock_s,
            output_cap=limits.output_cap_bytes,
            heartbeat=heartbeat,
            status_pipe=status,
        )
        result = _result(outcome, launch, workspace, limits, isolation)
        note_sandbox(span, result, outcome.cpu_s, outcome.peak_rss_bytes)
    return result


def _launcher_command(choice: str) -> Callable[[dict[str, Any]], list[str]]:
    """The native launcher when built (`make`), else the Python one; both do the same steps."""
    binary = native_launcher() if choice in ("auto", "native") else None
    if binary is None and choice == "native":
        raise SandboxUnavailable(
            f"the native sandbox launcher is not built: run `make` (it compiles {NATIVE_NAME})"
        )
    if binary is not None:
        return lambda spec: native_argv(binary, spec)
    # The worker's pid in plain text, for the sweep of orphans (activities/sandbox/sweep.py).
    return lambda spec: [
        sys.executable,
        "-I",
        "-S",
        launcher.__file__,
        str(spec["parent_pid"]),
        marshal.dumps(spec).hex(),
    ]


def _runtime(root: Path, workspace: Path, skills: Mapping[str, Path]) -> StepRuntime:
    """The checked step runtime; refuses binds whose host paths would reveal the host."""
    try:
        runtime = step_runtime(root)
    except StepRuntimeError as exc:
        raise SandboxUnavailable(str(exc)) from None
    problems = [
        host_path_problem(
            runtime.root,
            "step runtime",
            "keep the Forge checkout, its venv and home directories out of the runtime's path",
        ),
        host_path_problem(
            workspace,
            "workspace",
            "put workspaces under a neutral directory (FORGE_WORKSPACE_ROOT, by default "
            "/var/tmp/forge-<uid>/workspaces)",
        ),
    ]
    problems += [
        host_path_problem(
            path,
            f"skill {name}",
            "bind a copy staged under the workspace root, as the worker does",
        )
        for name, path in skills.items()
    ]
    for problem in problems:
        if problem is not None:
            raise SandboxUnavailable(problem)
    return runtime


def _step_env(runtime: StepRuntime, home: str, bridge: tuple[str, str] | None) -> dict[str, str]:
    """The complete environment: nothing from the worker (API keys, tokens) may leak in.

    The runtime's scripts come first on PATH, so a skill's script that starts `python` gets
    the step's interpreter. `bridge` is (client dir, socket path) as the step sees them, for a
    step that may call tools.
    """
    env = {
        "PATH": f"{runtime.bin_dir}:/usr/bin:/bin",
        "HOME": home,
        "LANG": "C.UTF-8",
        "PYTHONPATH": "",
        "PYTHONNOUSERSITE": "1",
    }
    if bridge is not None:
        env["PYTHONPATH"], env[forge_bridge.SOCKET_ENV] = bridge
    return env


def _find_bwrap(bwrap: str) -> str:
    found = shutil.which(bwrap)
    if found is None:
        raise SandboxUnavailable(
            f"bubblewrap ({bwrap}) is not installed, and steps run inside it: install it with "
            "`apt-get install bubblewrap` (Debian/Ubuntu; deploy/install.sh does it when run as "
            "root)"
        )
    return found


def _prepare_stage_dir() -> None:
    STAGE_DIR.mkdir(mode=0o755, parents=True, exist_ok=True)
    st = STAGE_DIR.lstat()
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != 0 or st.st_mode & 0o022:
        raise SandboxUnavailable(
            f"{STAGE_DIR} must be a root-owned directory writable only by root; remove it "
            "and let the worker recreate it"
        )


def _bwrap_launch(
    argv: list[str],
    workspace: Path,
    skills: Mapping[str, Path],
    limits: SandboxLimits,
    exe: str,
    status_fd: int,
    bridge: bool,
    runtime: StepRuntime,
) -> _Launch:
    # The runtime at its own (neutral) path: its scripts' shebangs and pyvenv.cfg name it.
    binds = [Bind(runtime.root, str(runtime.root))]
    binds.append(Bind(workspace, "/workspace", writable=True))
    if bridge:
        binds.append(Bind(runtime.bridge_dir, BRIDGE_LIB))
    for skill_id, path in sorted(skills.items()):
        if not _SKILL_ID.fullmatch(skill_id):
            raise ValueError(f"skill id {skill_id!r} is not a plain name ([A-Za-z0-9._-])")
        if not path.is_dir():
            raise ValueError(f"skill {skill_id}: {path} is not a directory")
        binds.append(Bind(path.resolve(), f"/skills/{skill_id}"))
    identity = sandbox_identity()
    stage = None
    if identity is not None:
        # bwrap will run as the sandbox user, who may not be able to reach these paths.
        _prepare_stage_dir()
        stage = {
            "dir": str(STAGE_DIR),
            "binds": [[str(b.source), f"b{i}"] for i, b in enumerate(binds)],
        }
        binds = [Bind(STAGE_DIR / f"b{i}", b.dest, b.writable) for i, b in enumerate(binds)]
        chown_tree(workspace, *identity)
    if argv[0] in _PYTHON_NAMES:
        argv = [str(runtime.python), *argv[1:]]
    if not os.access(PRLIMIT, os.X_OK):
        raise SandboxUnavailable(
            f"{PRLIMIT} is missing, and it sets each sandbox's process limit: install "
            "util-linux (`apt-get install util-linux`)"
        )
    cmd = bwrap_argv(
        exe,
        [*nproc_argv(limits), *argv],
        binds=binds,
        env=_step_env(
            runtime,
            "/workspace/work",
            (BRIDGE_LIB, forge_bridge.DEFAULT_SOCKET) if bridge else None,
        ),
        status_fd=status_fd,
        tmpfs_bytes=limits.file_size_mb * MIB,
    )
    return _Launch(argv=cmd, cwd=Path("/"), stage=stage, drop_to=identity, env={})


def _direct_launch(argv: list[str], workspace: Path, bridge: bool, runtime: StepRuntime) -> _Launch:
    # isolation "none": same env, limits and clock, but the worker's uid and filesystem view.
    def real(arg: str) -> str:
        if arg == "/workspace" or arg.startswith("/workspace/"):
            return str(workspace) + arg[len("/workspace") :]
        return arg

    argv = [real(a) for a in argv]
    env = _step_env(
        runtime,
        str(workspace / "work"),
        (str(runtime.bridge_dir), real(forge_bridge.DEFAULT_SOCKET)) if bridge else None,
    )
    if argv[0] in _PYTHON_NAMES:
        argv[0] = str(runtime.python)
    elif "/" not in argv[0]:
        argv[0] = shutil.which(argv[0], path=env["PATH"]) or argv[0]
    return _Launch(argv=argv, cwd=workspace, env=env)


def _bwrap_setup_failure(outcome: Outcome) -> str | None:
    """The line bwrap printed when it exited 1 before running the step, else None.

    bwrap reports such a failure as exit 1 with one `bwrap: ...` line and nothing else; a
    program that prints exactly that only gets itself classified as a sandbox fault.
    """
    if outcome.returncode != 1 or outcome.stdout or outcome.timed_out:
        return None
    lines = outcome.stderr.decode("utf-8", errors="replace").strip().splitlines()
    if len(lines) == 1 and lines[0].startswith("bwrap: "):
        return lines[0]
    return None


def _classify(
    outcome: Outcome, limits: SandboxLimits, isolation: Isolation
) -> tuple[int | None, str | None]:
    code = outcome.returncode
    sig: int | None = -code if code < 0 else None
    # bwrap reports a child that died by signal N as exit status 128+N.
    if isolation == "bwrap" and sig is None and code > 128 and code - 128 < signal.NSIG:
        sig = code - 128
    if outcome.timed_out:
        return None, "wall_clock"
    if sig is not None:
        if sig == signal.SIGXCPU or (sig == signal.SIGKILL and outcome.cpu_s >= limits.cpu_seconds):
            return None, "cpu"
        if sig == signal.SIGXFSZ:
            return None, "file_size"
        return None, f"signal:{sig}"
    if code != 0:
        tail = outcome.stderr[-_STDERR_TAIL:].decode("utf-8", errors="replace")
        if _MEMORY_RE.search(tail):
            return code, "memory"
        if _FILE_SIZE_RE.search(tail):
            return code, "file_size"
    return code, None


def _result(
    outcome: Outcome, launch: _Launch, workspace: Path, limits: SandboxLimits, isolation: Isolation
) -> SandboxResult:
    if outcome.launch_error is not None:
        stage, message = outcome.launch_error
        if stage == "exec" and isolation == "none":
            # The step's own argv[0] could not be executed: a step failure, like a shell's 127.
            return _build(outcome, isolation, 127, None, f"cannot run {launch.argv[0]}: {message}")
        text = f"the sandbox launcher failed ({stage}: {message})"
        # The worker's uid at its own RLIMIT_NPROC (threads and every sandbox count there):
        # the launcher could not fork; a later attempt may find processes free.
        if _BUSY in message:
            raise SandboxBusy(text)
        raise SandboxUnavailable(text)
    if isolation == "bwrap" and outcome.child_pid is None and not outcome.timed_out:
        detail = clipped(
            outcome.stderr.decode("utf-8", errors="replace").strip(),
            _STDERR_TAIL,
            "failure",
            keep="tail",
        )
        if _BUSY in detail:
            raise SandboxBusy(f"bubblewrap could not create the sandbox: {detail}")
        raise SandboxUnavailable(
            f"bubblewrap could not create the sandbox: {detail or 'no message'} "
            "(it needs unprivileged user namespaces: sysctl user.max_user_namespaces > 0 and, "
            "on Ubuntu, kernel.apparmor_restrict_unprivileged_userns=0)"
        )
    setup = _bwrap_setup_failure(outcome) if isolation == "bwrap" else None
    if setup is not None:
        # bwrap failed inside the new namespaces, before the step's program started (its
        # pid 1 could not fork while the worker's uid was at its own process limit).
        text = f"bubblewrap could not start the step: {setup}"
        raise SandboxBusy(text) if _BUSY in setup else SandboxUnavailable(text)
    exit_code, killed_by = _classify(outcome, limits, isolation)
    result = _build(outcome, isolation, exit_code, killed_by, None)
    return result.model_copy(update={"violations": scan_violations(workspace)})


def _build(
    outcome: Outcome,
    isolation: Isolation,
    exit_code: int | None,
    killed_by: str | None,
    stderr_note: str | None,
) -> SandboxResult:
    stderr = outcome.stderr.decode("utf-8", errors="replace")
    return SandboxResult(
        exit_code=exit_code,
        timed_out=outcome.timed_out,
        killed_by=killed_by,
        stdout=outcome.stdout.decode("utf-8", errors="replace"),
        stderr=stderr + (f"forge sandbox: {stderr_note}\n" if stderr_note else ""),
        stdout_truncated=outcome.stdout_truncated,
        stderr_truncated=outcome.stderr_truncated,
        duration_ms=outcome.duration_ms,
        isolation=isolation,
    )
