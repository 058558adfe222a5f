"""Sandbox launchers a dead worker left running are found by their command line and killed."""

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from activities.sandbox import launcher
from activities.sandbox import sweep as sweep_module
from activities.sandbox.native import NATIVE_NAME
from activities.sandbox.sweep import launcher_parent, orphaned_launchers

# How long a wait for another process may take: on a loaded machine (a full suite on two
# cores) starting or reaping a process has taken over the 5 s these tests once allowed.
WAIT_S = 60


def eventually(done: Callable[[], object]) -> bool:
    """Whether `done()` came true within WAIT_S, polled every 50 ms."""
    deadline = time.monotonic() + WAIT_S
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def dead_pid() -> int:
    proc = subprocess.Popen(["true"])
    proc.wait()
    return proc.pid


def lookalike(parent: int, *, leader: bool = True) -> subprocess.Popen[bytes]:
    """A process whose command line is a native launcher's naming `parent` (it only sleeps).

    A launcher leads its session; the child it forks for bwrap, until it execs, does not.
    """
    # sleep adds up its arguments: "0", the pid and "600" are all durations.
    return subprocess.Popen(
        [NATIVE_NAME, "0", str(parent), "600"], executable="/bin/sleep", start_new_session=leader
    )


ORPHAN_CHECK = """
import os, signal, sys
sys.path.insert(0, {root!r})
from activities.sandbox.sweep import orphaned_launchers, sweep_orphans
from tests.sandbox.test_sweep import WAIT_S, dead_pid, lookalike
orphan = lookalike(dead_pid())
alive = lookalike(os.getpid())  # this process is its parent, as a worker is a launcher's
try:
    assert orphan.pid in orphaned_launchers(), "the orphan was not found"
    assert alive.pid not in orphaned_launchers(), "a launcher whose worker lives was taken"
    sweep_orphans()
    assert orphan.wait(timeout=WAIT_S) == -signal.SIGKILL, "the orphan was not killed"
    assert alive.poll() is None, "a launcher whose worker lives was killed"
finally:
    for proc in (orphan, alive):
        if proc.poll() is None:
            proc.kill()
            proc.wait()
print("checked")
"""


def test_a_launcher_whose_worker_died_is_killed_and_one_whose_worker_lives_is_not():
    # In a pid namespace of its own: every worker that starts sweeps the orphans of its
    # namespace, so in the suite's (other tests start workers in parallel) one of them could
    # kill this test's orphan before the test looks for it.
    code = ORPHAN_CHECK.format(root=str(Path(__file__).resolve().parents[2]))
    done = subprocess.run(
        ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=WAIT_S * 3,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"


def test_a_launchers_forked_child_is_never_taken_for_an_orphan():
    # Its command line is the launcher's until it execs bwrap, and its parent is the launcher:
    # a sweep from another worker starting at that moment must leave it alone.
    child = lookalike(dead_pid(), leader=False)
    try:
        assert child.pid not in orphaned_launchers()
    finally:
        child.kill()
        child.wait()


def test_a_launcher_in_another_pid_namespace_is_left_alone():
    # A worker in a container names pids of its own namespace; a sweep from the host must not
    # read them as host pids. Here: a lookalike naming a dead pid, in a fresh pid namespace.
    marker = str(dead_pid() + 40000)
    inner = subprocess.Popen(
        [
            "unshare",
            "--pid",
            "--fork",
            "setsid",
            "bash",
            "-c",
            f"exec -a {NATIVE_NAME} /bin/sleep 0 {marker} 600",
        ],
        start_new_session=True,
    )
    try:

        def lookalikes() -> list[int]:
            return [
                p
                for p, _, _, argv in sweep_module._processes()
                if argv[:3] == [NATIVE_NAME, "0", marker]
            ]

        assert eventually(lookalikes), "the lookalike never started"
        found = lookalikes()
        assert not set(found) & set(orphaned_launchers())
    finally:
        os.killpg(inner.pid, signal.SIGKILL)
        inner.wait()


def test_only_a_launchers_command_line_names_a_worker():
    assert launcher_parent([NATIVE_NAME, "5", "1234", "1"]) == 1234
    assert launcher_parent(["/x/bin/" + NATIVE_NAME, "5", "1234"]) == 1234
    python = [sys.executable, "-I", "-S", launcher.__file__, "1234", "e3"]
    assert launcher_parent(python) == 1234
    assert launcher_parent([sys.executable, "-I", "-S", "/elsewhere/launcher.py", "1234"]) is None
    assert launcher_parent([NATIVE_NAME, "5", "12x4"]) is None  # never more than an integer
    assert launcher_parent(["sleep", "600"]) is None
    assert launcher_parent([]) is None


STARTER = """
import marshal, os, subprocess, sys, time
sys.path.insert(0, {root!r})
from activities.sandbox.native import native_argv, native_launcher
r, w = os.pipe()
spec = {{"argv": ["/bin/sleep", "60"], "env": {{}}, "stage": None, "drop_to": None,
        "rlimits": [], "reap": {reap}, "parent_pid": os.getpid(), "report_fd": w}}
if {native}:
    argv = native_argv(native_launcher(), spec)
else:
    argv = [sys.executable, "-I", "-S", {launcher!r}, str(os.getpid()), marshal.dumps(spec).hex()]
child = subprocess.Popen(argv, pass_fds=[w], start_new_session=True)
print(child.pid, flush=True)
time.sleep(60)
"""


@pytest.mark.parametrize("native", [True, False], ids=["native", "python"])
@pytest.mark.parametrize("reap", [True, False], ids=["reaping", "exec"])
def test_a_launcher_and_its_program_die_with_the_worker_that_started_it(native, reap):
    root = str(Path(__file__).resolve().parents[2])
    code = STARTER.format(root=root, reap=reap, native=native, launcher=launcher.__file__)
    worker = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert worker.stdout is not None
    started = int(worker.stdout.readline())
    program = started
    try:

        def running() -> bool:  # the launcher has exec'd (or forked) sleep
            if reap:
                return bool(Path(f"/proc/{started}/task/{started}/children").read_text().split())
            return Path(f"/proc/{started}/cmdline").read_bytes().startswith(b"/bin/sleep")

        assert eventually(running), "the launcher never started its program"
        if reap:
            program = int(Path(f"/proc/{started}/task/{started}/children").read_text().split()[0])
        worker.kill()  # SIGKILL: no cleanup of any kind runs in the worker
        worker.wait()
        eventually(lambda: not any(_alive(pid) for pid in (started, program)))
        alive = [pid for pid in (started, program) if _alive(pid)]
        assert alive == [], f"{alive} outlived the worker that started them"
    finally:
        for pid in (started, program):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if worker.poll() is None:
            worker.kill()
        worker.wait()
        worker.stdout.close()


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it counts as dead)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat[stat.rfind(")") + 2] != "Z"
