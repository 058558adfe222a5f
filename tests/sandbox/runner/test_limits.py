"""The runner's limits from inside the sandbox, and how each kill or refusal is classified."""

import concurrent.futures
import time
import uuid

import pytest

from activities.sandbox.runner import run_sandboxed
from tests.sandbox.runner.support import LIMITS, no_process_with, run
from tests.support.sandbox import needs_bwrap


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


HOLDER = """
import pathlib, subprocess, time
held = [subprocess.Popen(["sleep", "600"]) for _ in range(6)]
pathlib.Path("/workspace/work/holding").write_text(str(len(held)))
while not pathlib.Path("/workspace/work/release").exists():
    time.sleep(0.05)
for p in held:
    p.kill()
    p.wait()
print("held", len(held))
"""


@needs_bwrap
def test_concurrent_sandboxes_of_one_uid_each_have_their_own_process_limit(tmp_path):
    # RLIMIT_NPROC is set inside each sandbox's user namespace (limits.nproc_argv): while one
    # sandbox holds 8 of its 9 processes (bwrap's pid 1, python, 6 sleeps), a second one of
    # the same uid still starts 6 more. A per-uid count (the limit set before bwrap, as it was)
    # would refuse the second sandbox's forks, and would count the worker's threads too.
    limits = LIMITS.model_copy(update={"max_processes": 9})
    first, second = tmp_path / "first", tmp_path / "second"
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        holding = pool.submit(run, first, HOLDER, limits=limits)
        marker = first / "work" / "holding"
        while not marker.exists() and not holding.done():
            time.sleep(0.05)
        try:
            assert marker.exists(), holding.result().stderr
            (second / "work").mkdir(parents=True)
            (second / "work" / "release").touch()  # the second one releases at once
            other = run(second, HOLDER, limits=limits)
        finally:
            (first / "work" / "release").touch()
        held = holding.result()
    assert held.exit_code == 0 and held.stdout == "held 6\n", held.stderr
    assert other.exit_code == 0 and other.stdout == "held 6\n", other.stderr


@needs_bwrap
def test_a_step_over_its_process_limit_cannot_fork(ws):
    limits = LIMITS.model_copy(update={"max_processes": 4})
    result = run(
        ws,
        """
        import subprocess
        try:
            held = [subprocess.Popen(["sleep", "600"]) for _ in range(6)]
        except BlockingIOError as exc:
            print("refused:", exc.strerror)
        """,
        limits=limits,
    )
    assert result.exit_code == 0 and result.stdout == "refused: Resource temporarily unavailable\n"


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
