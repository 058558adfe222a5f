"""The bubblewrap runner against a real bwrap: isolation, hardening, limits and classification."""

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import uuid
from pathlib import Path

import pytest

from activities.sandbox import bwrap
from activities.sandbox.bwrap import Bind, bwrap_argv, sandbox_identity
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
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.typelib import load_profiles

ROOT = Path(__file__).resolve().parents[2]
needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make system-deps)"
)
LIMITS = SandboxLimits(
    cpu_seconds=30,
    memory_mb=1024,
    file_size_mb=16,
    max_processes=32,
    max_open_files=128,
    wall_clock_s=60,
    output_cap_bytes=65536,
)
STEP_ENV = {
    "PATH": f"{RUNTIME_DIR}/bin:/usr/bin:/bin",
    "HOME": "/workspace/work",
    "LANG": "C.UTF-8",
    "PYTHONPATH": "",
    "PYTHONNOUSERSITE": "1",
}


@pytest.fixture(autouse=True, params=["native", "python"])
def launcher_impl(request, monkeypatch) -> str:
    """Every test runs with the native launcher (built by make) and the Python fallback."""
    from activities.sandbox import native, runner

    if request.param == "python":
        monkeypatch.setattr(runner, "native_launcher", lambda: None)
    else:
        assert native.native_launcher() is not None, "build it: make (gcc launcher.c)"
    return request.param


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    return tmp_path / "ws"


def run(ws: Path, code: str, **kwargs) -> SandboxResult:
    """Write code to meta/step.py and run it the way steps run."""
    limits = kwargs.pop("limits", LIMITS)
    (ws / "meta").mkdir(parents=True, exist_ok=True)
    (ws / "meta" / "step.py").write_text(textwrap.dedent(code))
    return run_sandboxed(
        ["python", "/workspace/meta/step.py"], workspace=ws, limits=limits, **kwargs
    )


def no_process_with(marker: str) -> bool:
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if marker.encode() in Path(f"/proc/{pid}/cmdline").read_bytes():
                return False
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
    return True


def test_limits_from_the_default_profile():
    layers, _ = load_profiles()
    limits = SandboxLimits.from_policy(layers.builtin["default"].sandbox)
    assert limits.memory_mb == 2048 and limits.output_cap_bytes == 1048576


@needs_bwrap
def test_hello_world(ws):
    result = run(ws, "print('hello from the sandbox')")
    assert result.exit_code == 0 and result.killed_by is None and not result.timed_out
    assert result.stdout == "hello from the sandbox\n"
    assert result.isolation == "bwrap" and result.violations == []
    assert {p.name for p in ws.iterdir()} == {"input", "work", "output", "meta"}


@needs_bwrap
def test_runtime_libraries_import_and_nothing_of_etc_is_needed(ws):
    result = run(ws, "import jsonschema, pypdf, yaml, ssl, json, csv, sys; print(sys.prefix)")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.strip() == str(RUNTIME_DIR)


@needs_bwrap
def test_there_is_no_network(ws):
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        result = run(
            ws,
            f"""
            import socket
            print(socket.if_nameindex())
            try:
                socket.create_connection(("127.0.0.1", {port}), timeout=5)
                print("CONNECTED")
            except OSError as exc:
                print("BLOCKED", exc.errno)
            """,
        )
    assert result.exit_code == 0, result.stderr
    assert "[(1, 'lo')]" in result.stdout
    assert "BLOCKED" in result.stdout and "CONNECTED" not in result.stdout


@needs_bwrap
def test_environment_is_exactly_the_step_env_and_no_secret_leaks(ws, monkeypatch):
    monkeypatch.setenv("FORGE_TEST_SECRET", "s3cr3t-value-never-inside")
    result = run(
        ws,
        """
        import json, os
        print(json.dumps(dict(os.environ)))
        try:
            print(repr(open("/proc/1/environ", "rb").read()))
        except OSError as exc:
            print("unreadable", exc.errno)
        """,
    )
    assert result.exit_code == 0, result.stderr
    env_line, pid1_line = result.stdout.splitlines()
    assert json.loads(env_line) == STEP_ENV
    assert "s3cr3t" not in result.stdout
    assert pid1_line in ("b''",) or pid1_line.startswith("unreadable")


@needs_bwrap
def test_step_runs_unprivileged_without_capabilities_or_terminal(ws):
    result = run(
        ws,
        """
        import os
        status = dict(
            line.split(":\\t", 1) for line in open("/proc/self/status").read().splitlines()
        )
        print(os.getuid(), os.getgid(), os.getgroups())
        for key in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb", "NoNewPrivs"):
            print(key, status[key])
        # Without --new-session the session leader would be outside the pid namespace (sid 0).
        print("sid", os.getsid(0), "tty_nr", open("/proc/self/stat").read().split()[6])
        try:
            open("/dev/tty")
            print("TTY")
        except OSError as exc:
            print("no tty", exc.errno)
        """,
    )
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    uid, gid = (int(x) for x in lines[0].split()[:2])
    assert uid != 0 and gid != 0
    if os.geteuid() == 0:
        assert (uid, gid) == sandbox_identity()
    for line in lines[1:6]:
        assert line.split()[1] == "0000000000000000", line
    assert lines[6] == "NoNewPrivs 1"
    assert "sid 1 tty_nr 0" in lines and "TTY" not in lines


@needs_bwrap
def test_rlimits_are_set_explicitly(ws):
    result = run(
        ws,
        """
        import resource
        for name in ("CPU", "AS", "FSIZE", "NPROC", "NOFILE", "CORE"):
            print(name, *resource.getrlimit(getattr(resource, "RLIMIT_" + name)))
        """,
    )
    mib = 1024 * 1024
    assert result.stdout.splitlines() == [
        "CPU 30 240",  # hard: max(4 x wall clock 60 s, 60 s + 60 s)
        f"AS {1024 * mib} {1024 * mib}",
        f"FSIZE {16 * mib} {16 * mib}",
        "NPROC 32 32",
        "NOFILE 128 128",
        "CORE 0 0",
    ]


KEYRING_PROBE = """
import ctypes, json, sys
from pathlib import Path
from activities.sandbox import bwrap
from activities.sandbox.runner import SandboxLimits, run_sandboxed
bwrap.SANDBOX_USER = sys.argv[2]  # this test worker's sandbox user (tests/conftest.py)
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
assert libc.syscall(250, 1, None) >= 0  # keyctl(JOIN_SESSION_KEYRING): a throwaway session
assert libc.syscall(248, b"user", b"forge-test-key", b"secret", 6, -3) > 0  # add_key
limits = SandboxLimits(cpu_seconds=10, memory_mb=512, file_size_mb=1, max_processes=8,
                       max_open_files=64, wall_clock_s=30, output_cap_bytes=4096)
result = run_sandboxed(["python", "/workspace/meta/step.py"], workspace=Path(sys.argv[1]),
                       limits=limits)
print(json.dumps(result.model_dump()))
"""
KEYRING_STEP = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
found = libc.syscall(250, 10, -3, b"user", b"forge-test-key", 0)  # KEYCTL_SEARCH session
print("search", found, ctypes.get_errno())
buf = ctypes.create_string_buffer(256)
print("session-keys", libc.syscall(250, 11, -3, buf, 256))  # KEYCTL_READ: bytes of key ids
"""


@needs_bwrap
@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the probe uses x86_64 syscalls")
def test_session_keyring_is_fresh(ws):
    """A key in the worker's session keyring is out of reach of the step."""
    (ws / "meta").mkdir(parents=True)
    (ws / "meta" / "step.py").write_text(KEYRING_STEP)
    done = subprocess.run(
        [sys.executable, "-c", KEYRING_PROBE, str(ws), bwrap.SANDBOX_USER],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout.splitlines()[-1])
    assert result["exit_code"] == 0, result["stderr"]
    search, keys = result["stdout"].splitlines()
    assert search == "search -1 126"  # ENOKEY: not found, not merely forbidden
    assert keys == "session-keys 0"


@needs_bwrap
def test_host_secrets_are_not_readable(ws, tmp_path):
    skill = tmp_path / "skill"
    skill.mkdir()
    (skill / "SKILL.md").write_text("# a skill\n")
    (skill / "root-only.txt").write_text("root eyes only")
    (skill / "root-only.txt").chmod(0o600)
    hidden = (
        sorted(e for e in os.listdir("/root") if e != ".pyenv") if os.access("/root", 0) else []
    )
    result = run(
        ws,
        f"""
        import os
        print("shadow", os.path.exists("/etc/shadow"), os.path.exists("/etc"))
        print("root-entries", [e for e in {hidden!r} if os.path.lexists("/root/" + e)])
        try:
            print(open("/skills/s/root-only.txt").read())
        except PermissionError:
            print("root-only denied")
        """,
        skills={"s": skill},
    )
    assert result.exit_code == 0, result.stderr
    assert "shadow False False" in result.stdout
    assert "root-entries []" in result.stdout
    if os.geteuid() == 0:
        assert "root-only denied" in result.stdout and "root eyes" not in result.stdout


@needs_bwrap
def test_writes_outside_the_workspace_fail_and_tmp_vanishes(ws):
    marker = f"forge-{uuid.uuid4().hex}"
    code = f"""
        import os
        for path in ("/usr/forge-x", "/forge-x", "/dev/forge-x", "{sys.prefix}/forge-x"):
            try:
                open(path, "w").write("x")
                print("WROTE", path)
            except OSError as exc:
                print("refused", path, exc.errno)
        print("tmp had marker", os.path.exists("/tmp/{marker}"))
        open("/tmp/{marker}", "w").write("x")
        open("/workspace/output/result.json", "w").write('{{"ok": true}}')
        """
    first = run(ws, code)
    second = run(ws, code)
    assert first.exit_code == 0 and second.exit_code == 0, first.stderr + second.stderr
    assert "WROTE" not in first.stdout and first.stdout.count("refused") == 4
    assert "tmp had marker False" in second.stdout
    assert not Path(f"/tmp/{marker}").exists()
    assert json.loads(safe_read(ws, "output/result.json", 1024)) == {"ok": True}
    assert safe_walk(ws, "output") == ["output/result.json"]


@needs_bwrap
def test_memory_bomb_is_classified_memory(ws):
    limits = LIMITS.model_copy(update={"memory_mb": 256})
    result = run(ws, "blocks = [bytearray(64 * 1024 * 1024) for _ in range(64)]", limits=limits)
    assert result.killed_by == "memory" and result.exit_code == 1
    assert "MemoryError" in result.stderr


@needs_bwrap
def test_fork_bomb_is_contained_and_the_run_ends(ws):
    marker = f"forge-fork-{uuid.uuid4().hex}"
    limits = LIMITS.model_copy(update={"max_processes": 12})
    result = run(
        ws,
        f"""
        import os, sys, time
        forks = 0
        try:
            for _ in range(10_000):
                if os.fork() == 0:
                    os.execv(sys.executable, [sys.executable, "-c",
                             "import time; time.sleep(600)", "{marker}"])
                forks += 1
        except BlockingIOError:
            print("fork refused after", forks)
        """,
        limits=limits,
    )
    assert result.exit_code == 0, result.stderr
    assert not result.timed_out
    forks = int(result.stdout.split()[-1])
    assert forks < 12
    assert no_process_with(marker)


@needs_bwrap
@pytest.mark.parametrize("processes", [1, 2, 3])
def test_a_sandbox_uid_out_of_processes_is_busy_never_a_step_error(ws, processes):
    # Other sandboxes of the same uid can hold every process RLIMIT_NPROC allows (a fork bomb
    # next door): the launcher, bwrap's namespace setup or bwrap's pid 1 then cannot fork.
    # That is SandboxBusy (retried), never the step's own exit 1 (CODE_ERROR, not retried).
    limits = LIMITS.model_copy(update={"max_processes": processes})
    with pytest.raises(SandboxBusy, match="Resource temporarily unavailable"):
        run(ws, "print('never runs')", limits=limits)


@needs_bwrap
def test_wall_clock_kills_the_whole_sandbox(ws):
    marker = f"forge-stubborn-{uuid.uuid4().hex}"
    limits = LIMITS.model_copy(update={"wall_clock_s": 1.5})
    beats: list[int] = []
    result = run(
        ws,
        f"""
        import subprocess, sys
        subprocess.Popen([sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); time.sleep(600)",
            "{marker}"])
        print("started", flush=True)
        while True:
            pass
        """,
        limits=limits,
        heartbeat=lambda: beats.append(1),
    )
    assert result.timed_out and result.killed_by == "wall_clock" and result.exit_code is None
    assert result.stdout == "started\n"
    assert beats
    assert no_process_with(marker)


@needs_bwrap
@pytest.mark.parametrize("ignore_sigxcpu", [False, True])
def test_cpu_limit_is_classified_cpu(ws, ignore_sigxcpu):
    limits = LIMITS.model_copy(update={"cpu_seconds": 1, "cpu_hard_seconds": 2})
    prelude = "import signal; signal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
    result = run(ws, (prelude if ignore_sigxcpu else "") + "while True:\n    pass\n", limits=limits)
    assert result.killed_by == "cpu" and not result.timed_out and result.exit_code is None


@needs_bwrap
def test_huge_file_is_classified_file_size(ws):
    limits = LIMITS.model_copy(update={"file_size_mb": 1})
    result = run(
        ws, "open('/workspace/work/big', 'wb').write(b'x' * (2 * 1024 * 1024))", limits=limits
    )
    assert result.killed_by == "file_size" and result.exit_code == 1
    # A non-Python writer is killed by SIGXFSZ instead of seeing EFBIG.
    shell = run_sandboxed(
        ["/bin/sh", "-c", "exec head -c 2097152 /dev/zero > /workspace/work/big2"],
        workspace=ws,
        limits=limits,
    )
    assert shell.killed_by == "file_size" and shell.exit_code is None
    assert (ws / "work" / "big2").stat().st_size == 1024 * 1024


@needs_bwrap
def test_output_is_capped_drained_and_flagged(ws):
    limits = LIMITS.model_copy(update={"output_cap_bytes": 1000})
    result = run(
        ws,
        """
        import sys
        sys.stdout.write("o" * 5_000_000)
        sys.stderr.write("e" * 10)
        print("done", file=sys.stderr)
        """,
        limits=limits,
    )
    assert result.exit_code == 0
    assert result.stdout == "o" * 1000 and result.stdout_truncated
    assert result.stderr == "e" * 10 + "done\n" and not result.stderr_truncated


@needs_bwrap
def test_skill_directory_is_read_only(ws, tmp_path):
    skill = tmp_path / "skills" / "pdf-render"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text("# pdf-render\n")
    result = run(
        ws,
        """
        import os
        print(os.listdir("/skills"), open("/skills/pdf-render/SKILL.md").read().strip())
        try:
            open("/skills/pdf-render/new.txt", "w")
            print("WROTE")
        except OSError as exc:
            print("read-only", exc.errno)
        """,
        skills={"pdf-render": skill},
    )
    assert result.exit_code == 0, result.stderr
    assert "['pdf-render'] # pdf-render" in result.stdout
    assert "read-only 30" in result.stdout and not (skill / "new.txt").exists()
    with pytest.raises(ValueError, match="plain name"):
        run(ws, "pass", skills={"../etc": skill})


def test_isolation_none_runs_and_says_so(ws):
    result = run(
        ws,
        """
        import json, os
        print(json.dumps({"cwd": os.getcwd(), "env": dict(os.environ)}))
        open("output/out.txt", "w").write("x")
        """,
        isolation="none",
    )
    assert result.isolation == "none" and result.exit_code == 0, result.stderr
    seen = json.loads(result.stdout)
    assert seen["cwd"] == str(ws.absolute())
    assert seen["env"] == {**STEP_ENV, "HOME": str(ws.absolute() / "work")}
    assert safe_read(ws, "output/out.txt", 10) == b"x"


def test_isolation_none_still_enforces_the_wall_clock(ws):
    limits = LIMITS.model_copy(update={"wall_clock_s": 1.0})
    result = run(ws, "while True:\n    pass\n", limits=limits, isolation="none")
    assert result.timed_out and result.killed_by == "wall_clock"


def test_missing_bwrap_is_sandbox_unavailable(ws):
    with pytest.raises(SandboxUnavailable) as info:
        run(ws, "print('never')", bwrap="/nonexistent/bwrap")
    assert "apt-get install bubblewrap" in str(info.value)
    assert "sandbox.isolation: none" in str(info.value)


@needs_bwrap
def test_planted_links_and_fifos_are_refused_and_reported(ws):
    result = run(
        ws,
        """
        import os
        os.symlink("/etc/shadow", "/workspace/output/report.html")
        os.mkdir("/workspace/output/real")
        os.symlink("/etc", "/workspace/output/sub")
        os.mkfifo("/workspace/output/real/pipe")
        os.symlink("/root", "/workspace/meta/receipt.json")
        """,
    )
    assert result.exit_code == 0, result.stderr
    assert sorted(result.violations) == [
        "planted symlink meta/receipt.json -> /root",
        "planted symlink output/report.html -> /etc/shadow",
        "planted symlink output/sub -> /etc",
        "special file output/real/pipe (a fifo)",
    ]
    with pytest.raises(WorkspaceViolation, match="output/report.html: is a symlink"):
        safe_read(ws, "output/report.html", 1 << 20)
    with pytest.raises(WorkspaceViolation, match="output/sub: is a symlink"):
        safe_read(ws, "output/sub/passwd", 1 << 20)
    with pytest.raises(WorkspaceViolation, match="output/real/pipe: is a fifo"):
        safe_read(ws, "output/real/pipe", 1 << 20)
    with pytest.raises(WorkspaceViolation):
        safe_walk(ws, "output")


def test_safe_read_and_walk_refuse_planted_paths(tmp_path):
    ws = tmp_path / "ws"
    (ws / "output" / "real").mkdir(parents=True)
    (ws / "output" / "real" / "ok.txt").write_text("fine")
    (ws / "secret").write_text("host secret")
    assert safe_read(ws, "output/real/ok.txt", 100) == b"fine"
    assert safe_walk(ws, "output") == ["output/real/ok.txt"]
    assert safe_walk(ws, "meta") == []  # missing: no outputs, not an error

    (ws / "output" / "link.txt").symlink_to(ws / "secret")
    (ws / "output" / "dirlink").symlink_to(ws / "output" / "real")
    os.mkfifo(ws / "output" / "real" / "fifo")
    with pytest.raises(WorkspaceViolation, match=r"^output/link.txt: is a symlink"):
        safe_read(ws, "output/link.txt", 100)
    with pytest.raises(WorkspaceViolation, match=r"^output/dirlink: is a symlink"):
        safe_read(ws, "output/dirlink/ok.txt", 100)
    with pytest.raises(WorkspaceViolation, match=r"^output/real/fifo: is a fifo"):
        safe_read(ws, "output/real/fifo", 100)
    with pytest.raises(WorkspaceViolation, match="is a"):
        safe_walk(ws, "output")
    with pytest.raises(WorkspaceViolation, match="plain relative path"):
        safe_read(ws, "output/../secret", 100)
    with pytest.raises(WorkspaceViolation, match="plain relative path"):
        safe_read(ws, "/etc/passwd", 100)
    with pytest.raises(WorkspaceViolation, match="read limit"):
        safe_read(ws, "output/real/ok.txt", 3)
    with pytest.raises(FileNotFoundError):
        safe_read(ws, "output/real/missing.txt", 3)


def test_safe_walk_is_bounded(tmp_path):
    ws = tmp_path / "ws"
    (ws / "output").mkdir(parents=True)
    for i in range(5):
        (ws / "output" / f"{i}.txt").write_text("x")
    with pytest.raises(WorkspaceViolation, match="more than 3 entries"):
        safe_walk(ws, "output", max_entries=3)


def test_bwrap_command_always_carries_the_hardening_flags(tmp_path):
    cmd = bwrap_argv(
        "/usr/bin/bwrap",
        ["python", "x.py"],
        binds=[Bind(tmp_path, "/workspace", writable=True)],
        env=STEP_ENV,
        status_fd=9,
        tmpfs_bytes=1024,
    )
    for flag in ("--unshare-all", "--new-session", "--die-with-parent", "--clearenv"):
        assert flag in cmd
    assert cmd[cmd.index("--cap-drop") + 1] == "ALL"
    assert ["--bind", str(tmp_path), "/workspace"] == cmd[
        cmd.index("--bind") : cmd.index("--bind") + 3
    ]
    assert cmd[-2:] == ["python", "x.py"] and "--remount-ro" in cmd
    assert "/etc" not in cmd and "/root" not in cmd and "/home" not in cmd


def test_a_workspace_subdir_replaced_by_a_symlink_is_refused(tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "output").symlink_to("/etc")
    with pytest.raises(WorkspaceViolation, match="output: is a symlink"):
        run_sandboxed(["python", "-c", "pass"], workspace=ws, limits=LIMITS, isolation="none")


def test_launcher_report_encoding_is_json():
    """The launcher writes its report without importing json; it must still be JSON."""
    import json

    from hypothesis import given, settings
    from hypothesis import strategies as st

    from activities.sandbox import launcher

    @settings(max_examples=300, deadline=None)
    @given(
        st.dictionaries(
            st.text(),
            st.none()
            | st.booleans()
            | st.integers()
            | st.text()
            | st.floats(allow_nan=False, allow_infinity=False),
        )
    )
    def check(fields):
        r, w = os.pipe()
        try:
            launcher._report(w, **{f"k{i}": v for i, v in enumerate(fields.values())})
            line = os.read(r, 1 << 20)
        finally:
            os.close(r)
            os.close(w)
        assert json.loads(line) == {f"k{i}": v for i, v in enumerate(fields.values())}

    check()


def test_native_launcher_rejects_direct_use():
    import subprocess

    from activities.sandbox.native import native_launcher

    binary = native_launcher()
    assert binary is not None
    done = subprocess.run([str(binary)], capture_output=True, text=True)
    assert done.returncode == 2 and "Forge's sandbox runner" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["2", "0", "-", "0", "1", "RLIMIT_CORE", "0", "0", "-1"],  # gid and env missing
        ["2", "0", "-", "0", "0", "-1", "-1", "5", "--", "x"],  # env count past the end
        ["2", "0", "-", "99999999999999", "a", "b", "c", "d", "e", "f"],  # absurd counts
        ["2", "0", "-", "0", "0", "-1", "-1", "0", "x"],  # no -- separator
    ],
)
def test_native_launcher_refuses_malformed_arguments_without_crashing(args):
    import json as _json
    import subprocess

    from activities.sandbox.native import native_launcher

    done = subprocess.run([str(native_launcher()), *args], capture_output=True, text=True)
    assert done.returncode == 127  # a reported setup error, never a signal
    report = _json.loads(done.stderr.strip().splitlines()[-1])
    assert (
        report["error"] == "setup" and "arguments" in report["message"] or "--" in report["message"]
    )
