"""Pass C on generated plans of 10, 100 and 1,000 steps (~10 bindings each)."""

import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from activities.compile.typelib import load_library, load_profiles
from compiler.hashing import sha256_of
from compiler.plan.context import CompileContext
from compiler.plan.parse import parse_candidate
from compiler.plan.passes.contracts import contracts
from compiler.plan.passes.resolve import resolve
from schemas.plan import PlannerCandidate
from tests.bench.plans import generated_plan

SIZES = (10, 100, 1000)
GOALS_MS = {100: 50.0, 1000: 600.0}
LINEARITY_GOAL = 12.0


def _best_ms(fn: Callable[[], Any], repeats: int) -> float:
    """Median of `repeats` runs, in milliseconds (one warm-up run first)."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def run() -> list[dict[str, Any]]:
    layers, _ = load_profiles()
    ctx = CompileContext(library=load_library(), profiles=layers)
    results: list[dict[str, Any]] = []
    per_size: dict[int, float] = {}
    for n in SIZES:
        raw = generated_plan(n)
        resolved = resolve(parse_candidate(raw), ctx=ctx)
        bindings = sum(len(s.abstract_inputs) for s in resolved.steps)
        repeats = 15 if n < 1000 else 5
        pass_c = _best_ms(lambda r=resolved: contracts(r, ctx=ctx), repeats)
        # Baseline: touch the same plan once the cheapest way the compiler could (validate it,
        # hash its canonical JSON); Pass C's cost is reported as a multiple of that floor.
        text = json.dumps(raw)
        baseline = _best_ms(
            lambda t=text: sha256_of(PlannerCandidate.model_validate_json(t)), repeats
        )
        per_size[n] = pass_c
        goal = GOALS_MS.get(n)
        results.append(
            {
                "name": f"pass_c.{n}_steps",
                "steps": n,
                "bindings": bindings,
                "ms": round(pass_c, 2),
                "ms_per_step": round(pass_c / n, 3),
                "baseline": "validate + canonical sha256 of the same plan",
                "baseline_ms": round(baseline, 2),
                "ratio_to_baseline": round(pass_c / baseline, 2),
                "goal_ms": goal,
                "meets_goal": None if goal is None else pass_c <= goal,
                "figure": f"{pass_c:.1f} ms ({pass_c / n:.3f} ms/step, {bindings} bindings)",
                "versus": f"{pass_c / baseline:.2f}× baseline ({baseline:.1f} ms)",
                "goal": f"≤ {goal:.0f} ms" if goal else "-",
            }
        )
    ratio = per_size[1000] / per_size[100]
    results.append(
        {
            "name": "pass_c.linearity",
            "baseline": "pass_c.100_steps",
            "ratio_1000_over_100": round(ratio, 2),
            "goal_ratio": LINEARITY_GOAL,
            "meets_goal": ratio <= LINEARITY_GOAL,
            "figure": "-",
            "versus": f"{ratio:.2f}× pass_c.100_steps",
            "goal": f"≤ {LINEARITY_GOAL:.0f}×",
        }
    )
    return results
