"""Isolation none, planted paths, the bwrap command line and the launchers' argument handling."""

import json
import os
import subprocess

import pytest

from activities.sandbox.bwrap import Bind, bwrap_argv
from activities.sandbox.runner import (
    SandboxUnavailable,
    WorkspaceViolation,
    run_sandboxed,
    safe_read,
    safe_walk,
)
from tests.sandbox.runner.support import LIMITS, STEP_ENV, run
from tests.support.sandbox import needs_bwrap


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
    assert "deploy/install.sh" in str(info.value)


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

    from activities.sandbox.native import native_launcher

    binary = native_launcher()
    assert binary is not None
    done = subprocess.run([str(binary)], capture_output=True, text=True)
    assert done.returncode == 2 and "Forge's sandbox runner" in done.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["2", "1", "0", "-", "0", "1", "RLIMIT_CORE", "0", "0", "-1"],  # gid and env missing
        ["2", "1", "0", "-", "0", "0", "-1", "-1", "5", "--", "x"],  # env count past the end
        ["2", "1", "0", "-", "99999999999999", "a", "b", "c", "d", "e", "f"],  # absurd counts
        ["2", "1", "0", "-", "0", "0", "-1", "-1", "0", "x"],  # no -- separator
    ],
)
def test_native_launcher_refuses_malformed_arguments_without_crashing(args):
    import json as _json

    from activities.sandbox.native import native_launcher

    done = subprocess.run([str(native_launcher()), *args], capture_output=True, text=True)
    assert done.returncode == 127  # a reported setup error, never a signal
    report = _json.loads(done.stderr.strip().splitlines()[-1])
    assert (
        report["error"] == "setup" and "arguments" in report["message"] or "--" in report["message"]
    )
