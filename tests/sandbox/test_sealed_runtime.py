"""The sealed step runtime, seen from inside the sandbox: nothing of the host, its limits fixed.

A probe lists `/`, reads sys.path, /proc/self/mountinfo and /proc/1/cmdline, imports platform
libraries and reads (and tries to raise) its rlimits; it runs both through run_sandboxed and
through `forge sandbox exec`, exactly as a user would run it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from activities.compile.typelib import load_profiles
from activities.harness.failure import StepFailure
from activities.harness.program import Executor, launch
from activities.sandbox import step_runtime
from activities.sandbox.bwrap import _TOP_LEVEL
from activities.sandbox.launcher import SANDBOX_NICE
from activities.sandbox.runner import SandboxLimits, SandboxUnavailable, run_sandboxed
from activities.sandbox.step_runtime import RUNTIME_DIR, StepRuntimeError, expected_digest
from schemas.error_codes import ErrorCode
from tests.support.sandbox import needs_bwrap
from tests.upgrade_check import lock_pins

ROOT = Path(__file__).resolve().parents[2]
UV = ROOT / ".tools" / "bin" / "uv"
PLATFORM = (
    "anthropic",
    "boto3",
    "sqlalchemy",
    "temporalio",
    "psycopg",
    "pydantic",
    "orjson",
    "rich",
    "schemas",
    "compiler",
    "activities",
    "workflows",
    "workers",
)
RUNTIME_PACKAGES = ("jsonschema", "pypdf", "yaml")
LIMIT_NAMES = ("CPU", "AS", "FSIZE", "NPROC", "NOFILE", "CORE")
# Where the host keeps its own Python packages: mounted over, empty, inside every sandbox.
HIDDEN = ("/usr/local", "/usr/lib/python3/dist-packages")
PROBE = f"""
import json, os, resource, sys

def read(path):
    try:
        with open(path, "rb") as f:
            return f.read().decode("utf-8", "replace").replace("\\0", " ")
    except OSError as exc:
        return f"unreadable: {{exc}}"

report = {{
    "root": sorted(os.listdir("/")),
    "sys_path": sys.path,
    "executable": sys.executable,
    "prefix": sys.prefix,
    "mountinfo": read("/proc/self/mountinfo"),
    "pid1": read("/proc/1/cmdline"),
    "imports": {{}},
    "limits": {{}},
    "raise_hard": {{}},
    "nice": os.getpriority(os.PRIO_PROCESS, 0),
    "hidden": {{d: os.listdir(d) for d in {HIDDEN!r} if os.path.isdir(d)}},
}}
for name in {PLATFORM + RUNTIME_PACKAGES + ("forge_bridge",)!r}:
    try:
        __import__(name)
        report["imports"][name] = "imported"
    except ImportError:
        report["imports"][name] = "ImportError"
for name in {LIMIT_NAMES!r}:
    res = getattr(resource, "RLIMIT_" + name)
    soft, hard = resource.getrlimit(res)
    report["limits"][name] = [soft, hard]
    try:
        resource.setrlimit(res, (soft, hard + 1))
        report["raise_hard"][name] = "raised"
    except (ValueError, OSError) as exc:
        report["raise_hard"][name] = type(exc).__name__
try:
    os.setpriority(os.PRIO_PROCESS, 0, 0)
    report["renice"] = "lowered"
except OSError as exc:
    report["renice"] = type(exc).__name__
print(json.dumps(report))
"""


def _policy():
    layers, _ = load_profiles()
    return layers.builtin["default"].sandbox


def _private_strings(*extra: Path) -> list[str]:
    """Host paths whose text must not appear anywhere the step can read."""
    paths = [ROOT, Path(sys.prefix), Path(sys.base_prefix), Path.home(), *extra]
    return [str(p) for p in paths] + ["/root/", "/home/"]


def _check_root_names() -> set[str]:
    """`/` holds the read-only system, the runtime's /opt, the scratch dirs and the workspace."""
    names = {"dev", "proc", "tmp", "usr", "opt", "workspace"}
    return names | {n for n in _TOP_LEVEL if (Path("/") / n).exists()}


def _check_sealed(report: dict, *, private: list[str], bridge: bool = False) -> None:
    assert set(report["root"]) == _check_root_names() | ({"forge"} if bridge else set())
    assert report["executable"] == f"{RUNTIME_DIR}/bin/python"
    assert report["prefix"] == str(RUNTIME_DIR)
    assert all(
        p.startswith(("/usr/lib/python3", str(RUNTIME_DIR), "/workspace", "/forge/lib"))
        for p in report["sys_path"]
    ), report["sys_path"]
    readable = "\n".join(
        [report["mountinfo"], report["pid1"], *report["sys_path"], report["executable"]]
    )
    assert "unreadable" not in report["mountinfo"] and "bwrap" in report["pid1"]
    for secret in private:
        assert secret not in readable, f"{secret!r} is visible inside the sandbox"
    for name in PLATFORM:
        assert report["imports"][name] == "ImportError", f"{name} is importable by step code"
    for name in RUNTIME_PACKAGES:
        assert report["imports"][name] == "imported"
    assert report["imports"]["forge_bridge"] == ("imported" if bridge else "ImportError")
    assert report["raise_hard"] == {name: "ValueError" for name in LIMIT_NAMES}
    # Below the worker's and the API's CPU priority, and it cannot climb back (issue 35 §1).
    assert report["nice"] == SANDBOX_NICE and report["renice"] == "PermissionError"
    # Debian's interpreter is reachable as /usr/bin/python3.11, but not the host's packages.
    assert report["hidden"] == {d: [] for d in HIDDEN if Path(d).is_dir()}


def _expected_limits(timeout: int) -> dict[str, list[int]]:
    policy = _policy()
    mib = 1024 * 1024
    return {
        "CPU": [min(policy.cpu_seconds, timeout + 5), max(4 * timeout, timeout + 60)],
        "AS": [policy.memory_mb * mib] * 2,
        "FSIZE": [policy.file_size_mb * mib] * 2,
        "NPROC": [policy.max_processes] * 2,
        "NOFILE": [policy.max_open_files] * 2,
        "CORE": [0, 0],
    }


@needs_bwrap
@pytest.mark.parametrize("bridge", [False, True])
def test_step_code_sees_the_sealed_runtime_and_limits_that_follow_its_timeout(tmp_path, bridge):
    ws = tmp_path / "ws"
    (ws / "meta").mkdir(parents=True)
    (ws / "meta" / "probe.py").write_text(PROBE)
    # A step whose own timeout is 20 s: CPU soft 25 s, hard max(80, 80) s; the rest the policy's.
    result = launch(
        ws,
        Executor(argv=["python", "/workspace/meta/probe.py"], files={}),
        _policy(),
        bridge=bridge,
        timeout_s=20,
    )
    assert result.exit_code == 0, result.stderr
    report = json.loads(result.stdout)
    _check_sealed(report, private=_private_strings(), bridge=bridge)
    assert report["limits"] == _expected_limits(20)


@needs_bwrap
def test_forge_sandbox_exec_shows_the_sealed_runtime(tmp_path, monkeypatch):
    from workers.cli import app

    home = tmp_path / "forge-home"
    roots = Path(tempfile.mkdtemp(prefix="forge-ws-", dir="/var/tmp"))
    try:
        monkeypatch.setenv("FORGE_HOME", str(home))
        monkeypatch.setenv("FORGE_WORKSPACE_ROOT", str(roots / "workspaces"))
        script = tmp_path / "probe.py"
        script.write_text(PROBE)
        result = CliRunner().invoke(
            app, ["sandbox", "exec", str(script), "--json", "--timeout", "30"]
        )
        assert result.exit_code == 0, result.output
        payload = json.loads(result.output)
        report = json.loads(payload["stdout"])
        _check_sealed(report, private=_private_strings(home, tmp_path))
        assert report["limits"] == _expected_limits(30)
        # The temporary workspace lived under FORGE_WORKSPACE_ROOT and is gone.
        assert list((roots / "workspaces").iterdir()) == []
    finally:
        shutil.rmtree(roots)


def test_cpu_limits_derive_from_the_step_timeout_and_never_exceed_the_policy():
    policy = _policy()
    short = SandboxLimits.for_step(policy, 20)
    assert (short.cpu_seconds, short.cpu_hard_seconds, short.wall_clock_s) == (25, 80, 20)
    long = SandboxLimits.for_step(policy, 900)
    assert (long.cpu_seconds, long.cpu_hard_seconds) == (min(policy.cpu_seconds, 905), 3600)
    assert SandboxLimits.from_policy(policy) == SandboxLimits.for_step(policy, policy.wall_clock_s)
    with pytest.raises(ValueError, match="at least the soft one"):
        SandboxLimits(**{**short.model_dump(), "cpu_seconds": 30, "cpu_hard_seconds": 10})


def test_a_missing_runtime_is_refused_naming_the_command(tmp_path):
    (tmp_path / "ws").mkdir()
    with pytest.raises(
        SandboxUnavailable, match=r"not built .*run `make runtime`.*sudo make runtime"
    ):
        run_sandboxed(
            ["python", "-c", "pass"],
            workspace=tmp_path / "ws",
            limits=SandboxLimits.from_policy(_policy()),
            runtime_root=tmp_path / "no-runtime",
        )


def test_a_runtime_built_from_another_lock_is_refused(tmp_path):
    root = tmp_path / "runtime"
    (root / "bin").mkdir(parents=True)
    (root / "bin" / "python").symlink_to("/usr/bin/python3.11")
    (root / "forge-runtime.json").write_text(json.dumps({"digest": "0" * 64}))
    with pytest.raises(StepRuntimeError, match="built from another lock.*`make runtime`"):
        step_runtime.step_runtime(root)
    (root / "forge-runtime.json").write_text(json.dumps({"digest": expected_digest()}))
    assert step_runtime.step_runtime(root).python == root / "bin" / "python"


def test_workspaces_and_skills_in_the_checkout_or_a_home_are_refused(tmp_path):
    limits = SandboxLimits.from_policy(_policy())
    for workspace in (ROOT / ".forge" / "ws-probe", Path.home() / "forge-ws-probe"):
        with pytest.raises(SandboxUnavailable, match="would be visible to step code"):
            run_sandboxed(["python", "-c", "pass"], workspace=workspace, limits=limits)
        assert not workspace.exists()  # refused before anything was created
    (tmp_path / "ws").mkdir()
    with pytest.raises(SandboxUnavailable, match="skill csv-profile .* would be visible"):
        run_sandboxed(
            ["python", "-c", "pass"],
            workspace=tmp_path / "ws",
            limits=limits,
            skills={"csv-profile": ROOT / "stdlib" / "skills" / "csv-profile"},
        )


@pytest.mark.skipif(not UV.exists(), reason="uv is installed by make (.tools/bin/uv)")
def test_build_installs_exactly_the_lock_and_a_second_build_changes_nothing(tmp_path):
    root = tmp_path / "runtime"
    assert step_runtime.build(str(UV), root) is True
    manifest = json.loads((root / "forge-runtime.json").read_text())
    locked = lock_pins(step_runtime.LOCK_FILE.read_text())
    assert {name.replace("_", "-") for name in manifest["packages"]} == {
        name.replace("_", "-") for name in locked
    }
    assert (root / "bridge" / "forge_bridge.py").is_file()
    assert not list((root / "bin").glob("activate*")) and not (root / ".lock").exists()
    stamp = (root / "forge-runtime.json").stat().st_mtime_ns
    assert step_runtime.build(str(UV), root) is False
    assert (root / "forge-runtime.json").stat().st_mtime_ns == stamp


@pytest.mark.skipif(os.geteuid() != 0, reason="switches to an unprivileged user")
def test_a_user_who_cannot_write_opt_is_told_to_run_sudo_make_runtime():
    # A copy of what `python -m activities.sandbox.step_runtime` needs, readable by nobody.
    tree = Path(tempfile.mkdtemp(prefix="forge-runtime-nonroot-"))
    try:
        for rel in (
            "activities/__init__.py",
            "activities/sandbox/__init__.py",
            "activities/sandbox/step_runtime.py",
            "activities/sandbox/client/__init__.py",
            "activities/sandbox/client/forge_bridge.py",
            "activities/sandbox/runtime/requirements.lock",
        ):
            (tree / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(ROOT / rel, tree / rel)
        subprocess.run(["chmod", "-R", "a+rX", str(tree)], check=True)
        done = subprocess.run(
            [
                "runuser",
                "-u",
                "nobody",
                "--",
                "/usr/bin/python3.11",
                "-m",
                "activities.sandbox.step_runtime",
                "build",
                "--uv",
                "/bin/false",
                "--root",
                "/opt/forge-nonroot-probe/runtime",
            ],
            cwd=tree,
            capture_output=True,
            text=True,
            check=False,
        )
    finally:
        shutil.rmtree(tree)
    assert done.returncode == 2
    assert done.stdout == ""
    [line] = done.stderr.splitlines()
    assert line.startswith("error: cannot write /opt/forge-nonroot-probe/runtime")
    assert "run `sudo make runtime` once" in line
    assert not Path("/opt/forge-nonroot-probe").exists()


@needs_bwrap
def test_the_probe_shows_what_docs_sandbox_says(tmp_path, monkeypatch):
    from workers.cli import app

    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    probe = ROOT / "examples" / "sandbox-probe" / "probe.py"
    result = CliRunner().invoke(app, ["sandbox", "exec", str(probe), "--json", "--timeout", "20"])
    assert result.exit_code == 0, result.output
    lines = json.loads(result.output)["stdout"].splitlines()
    by_kind: dict[str, list[str]] = {}
    for line in lines:
        kind, _, rest = line.partition(" ")
        by_kind.setdefault(kind, []).append(rest.strip())
    assert by_kind["/"] == [" ".join(sorted(_check_root_names()))]
    assert by_kind["import"] == [
        f"{name} ImportError"
        for name in ("anthropic", "boto3", "sqlalchemy", "temporalio", "psycopg", "pydantic")
    ] + ["workers ImportError"]
    limits = _expected_limits(20)
    assert by_kind["rlimit"] == [
        f"{name} {limits[name][0]} {limits[name][1]} cannot raise"
        for name in ("CPU", "AS", "FSIZE", "NPROC", "NOFILE")
    ]
    mounts = dict(m.split(" <- ") for m in by_kind["mount"])
    assert mounts["/opt/forge/runtime"] == "/opt/forge/runtime"
    assert mounts["/workspace"].startswith(f"/var/tmp/forge-{os.getuid()}/workspaces/")


def _third_party_imports() -> dict[str, list[str]]:
    """{module: [files]} for every non-stdlib, non-sibling import in the stdlib's step code."""
    import ast

    found: dict[str, list[str]] = {}
    for path in sorted((ROOT / "stdlib").rglob("*.py")):
        siblings = {p.stem for p in path.parent.parent.rglob("*.py")}
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            for name in names:
                top = name.split(".")[0]
                if top in sys.stdlib_module_names or top in siblings or top == "__future__":
                    continue
                found.setdefault(top, []).append(str(path.relative_to(ROOT)))
    return found


@needs_bwrap
def test_every_package_the_stdlib_step_code_imports_is_in_the_runtime(tmp_path):
    # Adapters and skill scripts run in the sandbox: what they import must be in the runtime's
    # lock, or the step fails with ImportError in a user's run, not in a test.
    wanted = _third_party_imports()
    assert {"jsonschema", "pypdf", "yaml", "markdown"} <= set(wanted)
    code = (
        "import importlib\n"
        f"for name in {sorted(wanted)!r}:\n"
        "    try:\n"
        "        importlib.import_module(name)\n"
        "    except ImportError as exc:\n"
        "        print(name, exc)\n"
    )
    (tmp_path / "ws").mkdir()
    result = run_sandboxed(
        ["python", "-c", code],
        workspace=tmp_path / "ws",
        limits=SandboxLimits.from_policy(_policy()),
    )
    assert result.exit_code == 0, result.stderr
    missing = result.stdout.splitlines()
    assert not missing, (
        f"not importable in the step runtime: {missing}, imported by "
        f"{ {m.split()[0]: wanted[m.split()[0]] for m in missing} }; add the package to "
        "activities/sandbox/runtime/requirements.in and run `make lock`"
    )


def test_a_worker_refuses_a_profile_without_bubblewrap(tmp_path):
    # `isolation: none` in a profile never reaches run_sandboxed from the harness: the step
    # fails POLICY_BLOCKED and nothing runs (docs/security.md#sandboxes-in-containers).
    ws = tmp_path / "ws"
    (ws / "meta").mkdir(parents=True)
    marker = ws / "ran"
    code = f"open({str(marker)!r}, 'w').write('ran')\n".encode()
    policy = _policy().model_copy(update={"isolation": "none"})
    with pytest.raises(StepFailure) as info:
        launch(
            ws, Executor(argv=["python", "/workspace/meta/s.py"], files={"meta/s.py": code}), policy
        )
    assert info.value.failure_class == ErrorCode.POLICY_BLOCKED
    assert "sandbox.isolation" in info.value.message and "bwrap" in info.value.message
    assert not marker.exists()
