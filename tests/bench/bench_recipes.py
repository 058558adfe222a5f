"""Recipe matching latency at 1,000 and 10,000 recipes against a rapidfuzz full scan.

The library is the curated recipes plus generated ones (seeded, so every run sees the same
library): titles, summaries, tags (a fifth of them two-word phrases) and anti-triggers drawn from
the vocabulary of stdlib/ (every word of 3-14 letters in its YAML and recipe files, about 2,600),
with a mild Zipf skew so a few words are common across recipes, as "data" or "review" are. The
queries are every prompt of the labelled set (tests/data/recipes/prompts.yaml). The figure is
the p50 and p99 latency of `RecipeLibrary.match` (the index built once, before timing; one
warm-up pass); the baseline, in the same run over the same prompts, is
`rapidfuzz.process.extractOne(prompt, blobs, scorer=fuzz.token_set_ratio)` over one text blob
per recipe (title, summary, tags), measured the same way: each prompt's latency is the median
of ROUNDS calls, and p50/p99 are taken across the prompts. The full scorer without the index
(`indexed=False`) is timed too, and must give the same result as the index on every labelled
prompt.

Run on its own with `python -m tests.bench.bench_recipes` (prints the figures and merges them
into bench-results.json); `run()` has the shape `tests/bench/__main__.py` collects.
"""

import gc
import random
import re
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

from compiler.recipes import RecipeLibrary, load_library
from compiler.recipes.text import STOP_WORDS
from schemas.recipes import Recipe, RecipeStep
from tests.bench.report import run_alone
from tests.recipes.labelled import evaluate, load_labels

ROOT = Path(__file__).resolve().parents[2]
STDLIB = ROOT / "stdlib"
SEED = 4004
ROUNDS = 5  # timed passes over the prompt set
SIZES = (1_000, 10_000)
GOAL_P99_MS = {1_000: 0.5, 10_000: 2.0}
_WORD = re.compile(r"[a-z]{3,14}")


def vocabulary() -> list[str]:
    """Every word of stdlib's YAML and recipe files, stop-words out, in a seeded order."""
    found: set[str] = set()
    for path in sorted([*STDLIB.rglob("*.yaml"), *STDLIB.rglob("*.md")]):
        found.update(_WORD.findall(path.read_text(encoding="utf-8").lower()))
    words = sorted(found - STOP_WORDS)
    random.Random(SEED).shuffle(words)  # which words are common is arbitrary, but fixed
    return words


def generated(n: int, vocab: list[str]) -> list[Recipe]:
    rng = random.Random(SEED + n)
    weights = [1 / (rank + 10) ** 0.8 for rank in range(len(vocab))]

    def pick(k: int) -> list[str]:
        return rng.choices(vocab, weights=weights, k=k)

    def tag() -> str:
        return " ".join(pick(2)) if rng.random() < 0.2 else pick(1)[0]

    recipes = []
    for i in range(n):
        step = RecipeStep(index=0, title="Do it", body="Do it.", prose="Do it.")
        recipes.append(
            Recipe(
                slug=f"gen-{i:05d}",
                title=" ".join(pick(rng.randint(2, 4))).capitalize(),
                summary=" ".join(pick(rng.randint(6, 12))).capitalize(),
                tags=list(dict.fromkeys(tag() for _ in range(rng.randint(3, 8)))),
                not_when=[tag() for _ in range(rng.randint(0, 2))],
                steps=[step],
            )
        )
    return recipes


def _blob(r: Recipe) -> str:
    return " ".join([r.title, r.summary, *r.tags]).lower()


def _latencies_ms(fn: Callable[[str], Any], prompts: list[str], rounds: int) -> list[float]:
    """Each prompt's latency: the median of `rounds` calls (after a warm-up pass).

    The median per prompt keeps a preemption on a shared machine from posing as a slow prompt;
    p50 and p99 are then taken across the prompts.
    """
    for p in prompts:  # warm-up: stem cache, allocator
        fn(p)
    gc.collect()
    per_prompt: list[list[float]] = [[] for _ in prompts]
    for _ in range(rounds):
        for i, p in enumerate(prompts):
            start = time.perf_counter()
            fn(p)
            per_prompt[i].append((time.perf_counter() - start) * 1000)
    return [statistics.median(times) for times in per_prompt]


def _pct(times: list[float], q: int) -> float:
    return statistics.quantiles(times, n=100, method="inclusive")[q - 1]


def _measure(n: int, curated: RecipeLibrary, vocab: list[str]) -> dict[str, Any]:
    labels = load_labels()
    prompts = [lb.prompt for lb in labels]
    lib = RecipeLibrary([*generated(n - len(curated), vocab), *curated])
    lib.index()  # built once, outside the timing
    blobs = [_blob(r) for r in lib]

    def baseline(p: str) -> Any:
        return process.extractOne(p.lower(), blobs, scorer=fuzz.token_set_ratio)

    indexed = _latencies_ms(lib.match, prompts, ROUNDS)
    base = _latencies_ms(baseline, prompts, ROUNDS)
    full, disagree = [], []
    for p in prompts:  # one pass of the unindexed scorer: timed, and compared with the index
        start = time.perf_counter()
        reference = lib.match(p, indexed=False)
        full.append((time.perf_counter() - start) * 1000)
        if lib.match(p) != reference:
            disagree.append(p)
    top1 = evaluate(labels, lib).top1
    p50, p99 = _pct(indexed, 50), _pct(indexed, 99)
    b50, b99 = _pct(base, 50), _pct(base, 99)
    f50, f99 = _pct(full, 50), _pct(full, 99)
    goal = GOAL_P99_MS[n]
    return {
        "name": f"recipes.match_{n}",
        "recipes": len(lib),
        "prompts": len(prompts),
        "rounds_per_prompt": ROUNDS,
        "p50_ms": round(p50, 4),
        "p99_ms": round(p99, 4),
        "baseline": "rapidfuzz extractOne token_set_ratio over one blob per recipe",
        "baseline_p50_ms": round(b50, 4),
        "baseline_p99_ms": round(b99, 4),
        "ratio_p50_to_baseline": round(p50 / b50, 3),
        "ratio_p99_to_baseline": round(p99 / b99, 3),
        "full_scan_p50_ms": round(f50, 4),
        "full_scan_p99_ms": round(f99, 4),
        "index_disagreements": len(disagree),
        "top1_correct": top1[0],
        "top1_of": top1[1],
        "goal_p99_ms": goal,
        "meets_goal": p99 <= goal and not disagree,
        "figure": f"p50 {p50:.3f} ms, p99 {p99:.3f} ms ({len(lib):,} recipes; "
        f"index = full scan on {len(prompts) - len(disagree)}/{len(prompts)} prompts)",
        "versus": f"p99 {p99 / b99:.2f}× rapidfuzz full scan ({b99:.2f} ms); "
        f"unindexed scorer p99 {f99:.2f} ms",
        "goal": f"p99 ≤ {goal:g} ms, same result as the unindexed scorer",
    }


def run() -> list[dict[str, Any]]:
    curated = load_library(STDLIB / "recipes")
    vocab = vocabulary()
    return [_measure(n, curated, vocab) for n in SIZES]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
