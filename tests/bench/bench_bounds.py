"""Issue 35: the front end's CPU work at the size caps, and what it does to a worker's loop.

Three figures, each against a baseline measured in the same run:

- `bounds.match_max_objective`: recipes__match's pure work (effort signals and the match over
  the stdlib library) on an objective at its cap (schemas/bounds.OBJECTIVE_MAX, made-up words,
  the worst case for the stem cache) against a typical one-line objective.
- `bounds.compile_max_plan`: Passes B..E on a plan at PLAN_MAX_BYTES (140 steps, each with the
  longest objective and criteria allowed, made-up words) against the same 140-step plan with
  one-line texts.
- `bounds.loop_lag_during_compile`: how late a worker's event loop wakes (p99 of 10 ms sleeps)
  while that maximum compile runs in an activity thread, against the same loop idle. This is
  the figure that decides between a process pool and bounds: under the GIL a thread cannot
  take the loop's turn for more than the switch interval at a time, so bounded work in a thread
  slows the loop's tasks by milliseconds, never stops them; a pool would add a process per
  worker and a pickling of every input for work that takes seconds at most.

Run with `make bench BENCH=bounds` or `python -m tests.bench.bench_bounds`.
"""

import asyncio
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

from activities.compile.typelib import load_library as load_types
from activities.compile.typelib import load_profiles
from activities.recipes.disk import load_library
from compiler.plan.context import CompileContext
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from compiler.recipes import effort_signals
from compiler.recipes.text import stem
from schemas.bounds import OBJECTIVE_MAX
from tests.bench.plans import generated_plan, made_up_words, maximum_plan
from tests.bench.report import run_alone
from tests.recipes.conftest import STDLIB_RECIPES

TYPICAL = "reconcile the invoices against the rate cards and report the discrepancies"
STEPS = 140  # the most steps with maximum texts that fit PLAN_MAX_BYTES
GOALS = {"match_ms": 2_000.0, "compile_ratio": 5.0, "lag_ms": 100.0}


def _cold_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Median ms of `repeats` runs, each with the stem cache cleared (worst case: all misses)."""
    times = []
    for _ in range(repeats):
        stem.cache_clear()
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _match_figure() -> dict[str, Any]:
    library = load_library(STDLIB_RECIPES)
    library.scorer()
    longest = made_up_words(OBJECTIVE_MAX, 11)

    def match(text: str) -> Callable[[], Any]:
        return lambda: (effort_signals(text), library.match(text))

    base = _cold_ms(match(TYPICAL), 7)
    ms = _cold_ms(match(longest), 5)
    goal = GOALS["match_ms"]
    return {
        "name": "bounds.match_max_objective",
        "ms": round(ms, 1),
        "baseline": "the same match of a one-line objective",
        "baseline_ms": round(base, 2),
        "ratio_to_baseline": round(ms / base, 1),
        "goal_ms": goal,
        "meets_goal": ms <= goal,
        "figure": f"{ms:.0f} ms for {OBJECTIVE_MAX:,} characters",
        "versus": f"{ms / base:.0f}× a one-line objective ({base:.1f} ms); timeout 120 s",
        "goal": f"≤ {goal:.0f} ms",
    }


def _compile_figures() -> list[dict[str, Any]]:
    layers, _ = load_profiles()
    ctx = CompileContext(library=load_types(), profiles=layers)
    short = parse_candidate(generated_plan(STEPS))
    longest = parse_candidate(maximum_plan(STEPS))
    base = _cold_ms(lambda: compile_plan(short, ctx=ctx), 3)
    ms = _cold_ms(lambda: compile_plan(longest, ctx=ctx), 3)
    ratio = ms / base
    lag, idle = _loop_lag(lambda: compile_plan(longest, ctx=ctx))
    return [
        {
            "name": "bounds.compile_max_plan",
            "ms": round(ms, 1),
            "baseline": f"the same {STEPS} steps with one-line texts",
            "baseline_ms": round(base, 1),
            "ratio_to_baseline": round(ratio, 2),
            "goal_ratio": GOALS["compile_ratio"],
            "meets_goal": ratio <= GOALS["compile_ratio"],
            "figure": f"{ms:.0f} ms for a 4 MiB plan of {STEPS} steps",
            "versus": f"{ratio:.2f}× one-line texts ({base:.0f} ms); timeout 480 s",
            "goal": f"≤ {GOALS['compile_ratio']:.0f}×",
        },
        {
            "name": "bounds.loop_lag_during_compile",
            "lag_p99_ms": round(lag, 1),
            "baseline": "the same loop, idle",
            "baseline_ms": round(idle, 2),
            "meets_goal": lag <= GOALS["lag_ms"],
            "figure": f"p99 wake-up {lag:.1f} ms late while compiling in a thread",
            "versus": f"idle {idle:.2f} ms late",
            "goal": f"≤ {GOALS['lag_ms']:.0f} ms (else a process pool)",
        },
    ]


def _loop_lag(work: Callable[[], Any]) -> tuple[float, float]:
    """p99 lateness of a 10 ms sleep: while `work` runs in a thread, and with the loop idle."""

    async def lateness(until: Callable[[], bool], at_least: int) -> list[float]:
        late: list[float] = []
        while not until() or len(late) < at_least:
            start = time.perf_counter()
            await asyncio.sleep(0.01)
            late.append((time.perf_counter() - start - 0.01) * 1000)
        return late

    def p99(xs: list[float]) -> float:
        return sorted(xs)[int(0.99 * (len(xs) - 1))]

    async def measure() -> tuple[float, float]:
        done = threading.Event()

        def run() -> None:
            stem.cache_clear()
            work()
            done.set()

        thread = threading.Thread(target=run)
        thread.start()
        busy = await lateness(done.is_set, 10)
        thread.join()
        idle = await lateness(lambda: True, 100)
        return p99(busy), p99(idle)

    return asyncio.run(measure())


def run() -> list[dict[str, Any]]:
    return [_match_figure(), *_compile_figures()]


if __name__ == "__main__":
    raise SystemExit(run_alone(run()))
