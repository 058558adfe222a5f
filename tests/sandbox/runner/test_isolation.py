"""The runner against a real bwrap: what step code can see, reach and keep."""

import json
import os
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from activities.compile.typelib import load_profiles
from activities.sandbox import bwrap
from activities.sandbox.bwrap import sandbox_identity
from activities.sandbox.runner import (
    SandboxLimits,
    safe_read,
    safe_walk,
)
from activities.sandbox.step_runtime import RUNTIME_DIR
from tests.sandbox.runner.support import ROOT, STEP_ENV, run
from tests.support.sandbox import needs_bwrap


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
