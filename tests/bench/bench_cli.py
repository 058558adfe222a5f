"""Whole-process starts of `forge` against bare interpreters doing the least the same job needs.

Issue 34 §1: every verb, `forge --help` included, should start in well under a second. Each
figure is a fresh process, started the way the console script starts it (`from workers.cli
import main; main()`, from this checkout), timed from spawn to exit, interleaved with its
baseline and alternating which goes first so a shared machine's noise hits both; the figure is
the median of N runs each.

`cli.help_start`: `forge --help` against `python -c 'import typer'` (goal: ≤ 3× its median).

`cli.status_start`: `forge status RUN` of a completed run (the billing plan's seven steps, run
once with `forge run` against a Temporal dev server started by `tests/temporal_env.py`) against a
bare `import temporalio.client`, `Client.connect` and one `describe` of the same workflow
(goal: ≤ 1.5×). `forge status` does more than that one call (it reads the run's result from its
history and renders the steps table); the goal says that work should cost little next to
starting a Temporal client at all.

Run on its own with `python -m tests.bench.bench_cli`.
"""

import asyncio
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.bench.report import run_alone
from tests.temporal_env import temporal_test_env
from tests.workflows.engine import BILLING, billing_inputs

ROOT = Path(__file__).resolve().parents[2]
N = 11
HELP_GOAL = 3.0
STATUS_GOAL = 1.5
# The console script's body: `forge = "workers.cli:main"` in pyproject.toml.
FORGE = (sys.executable, "-c", "from workers.cli import main; main()")
BARE_TYPER = (sys.executable, "-c", "import typer")
BARE_QUERY = (
    sys.executable,
    "-c",
    "import asyncio, gc, sys\n"
    "from temporalio.client import Client\n"
    "async def main():\n"
    "    client = await Client.connect(sys.argv[1])\n"
    "    await client.get_workflow_handle(sys.argv[2]).describe()\n"
    "asyncio.run(main())\n"
    # Without it a client left to the interpreter's finalization crashes it (SIGSEGV/SIGABRT)
    # in about a third of runs: temporalio/sdk-python#300. `forge` does the same (run_async).
    "gc.collect()\n",
)


def _ms(argv: Sequence[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True)
    elapsed = (time.perf_counter() - start) * 1000
    if done.returncode != 0:
        raise RuntimeError(f"{argv[-1][:60]!r} exited {done.returncode}: {done.stderr[-500:]}")
    return elapsed


def _interleaved(
    ours: Sequence[str], base: Sequence[str], env: dict[str, str]
) -> tuple[list[float], list[float]]:
    _ms(ours, env)  # warm-up: page cache, .pyc files
    _ms(base, env)
    a: list[float] = []
    b: list[float] = []
    for i in range(N):
        if i % 2:
            a.append(_ms(ours, env))
            b.append(_ms(base, env))
        else:
            b.append(_ms(base, env))
            a.append(_ms(ours, env))
    return a, b


def _result(
    name: str, label: str, baseline: str, goal: float, ours: list[float], base: list[float]
) -> dict[str, Any]:
    p50, b50 = statistics.median(ours), statistics.median(base)
    ratio = p50 / b50
    return {
        "name": name,
        "runs": N,
        "command": label,
        "ms_p50": round(p50, 1),
        "ms_min": round(min(ours), 1),
        "baseline": baseline,
        "baseline_ms_p50": round(b50, 1),
        "baseline_ms_min": round(min(base), 1),
        "ratio_to_baseline": round(ratio, 3),
        "goal_ratio": goal,
        "meets_goal": ratio <= goal,
        "figure": f"p50 {p50:.0f} ms ({label}, whole process, n={N})",
        "versus": f"{ratio:.2f}× {baseline} (p50 {b50:.0f} ms)",
        "goal": f"p50 ≤ {goal}×",
    }


def _help(env: dict[str, str]) -> dict[str, Any]:
    ours, base = _interleaved((*FORGE, "--help"), BARE_TYPER, env)
    bare = "python -c 'import typer'"
    return _result("cli.help_start", "forge --help", bare, HELP_GOAL, ours, base)


def _completed_run(env: dict[str, str], root: Path) -> str:
    """Run the billing plan once with `forge run`; its run id."""
    inputs = [arg for n, p in billing_inputs(root).items() for arg in ("--input", f"{n}={p}")]
    done = subprocess.run(
        [*FORGE, "run", str(BILLING / "frozen-plan.json"), *inputs],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    found = re.search(r"run (run-\d{8}-\d{6}-[0-9a-f]{6}) completed", done.stdout)
    if done.returncode != 0 or found is None:
        raise RuntimeError(f"forge run failed ({done.returncode}): {done.stdout[-1000:]}")
    return found.group(1)


async def _status(env: dict[str, str], root: Path) -> dict[str, Any]:
    async with temporal_test_env() as temporal:
        address = temporal.client.service_client.config.target_host
        env = {**env, "FORGE_TEMPORAL_ADDRESS": address, "FORGE_TASK_QUEUE": "bench-cli"}
        run_id = _completed_run(env, root)
        ours, base = _interleaved((*FORGE, "status", run_id), (*BARE_QUERY, address, run_id), env)
    return _result(
        "cli.status_start",
        "forge status RUN",
        "python: import temporalio.client, connect, one describe",
        STATUS_GOAL,
        ours,
        base,
    )


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-cli-") as tmp:
        root = Path(tmp)
        env = {**os.environ, "FORGE_HOME": str(root / "home"), "COLUMNS": "200"}
        # An installed `forge` writes its bytecode on first use: without it every start would
        # compile the changed modules again (PYTHONDONTWRITEBYTECODE is set in some shells).
        for name in ("FORGE_TEMPORAL_ADDRESS", "FORGE_TASK_QUEUE", "PYTHONDONTWRITEBYTECODE"):
            env.pop(name, None)
        results = [_help(env)]
        results.append(asyncio.run(_status(env, root)))
    return results


if __name__ == "__main__":
    raise SystemExit(run_alone(run()))
