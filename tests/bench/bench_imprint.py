"""Imprinting: template generation for every operation of the largest OpenAPI document tested.

The document is the largest file in tests/data/openapi (STAPI, OpenAPI 3.0, 120 operations).
For each operation `operation_template` builds the request-body template and the parameters
template; the figure is milliseconds per operation (median of REPEATS runs over all
operations, after one warm-up; operations whose schema is refused are counted, not timed).
The baseline, in the same run, touches each operation object
the cheapest way possible (`json.dumps` of it). A second row covers every tested document.

Run on its own with `python -m tests.bench.bench_imprint` (prints the figures and merges them
into bench-results.json); `run()` has the shape `tests/bench/__main__.py` collects.
"""

import json
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compiler.imprint import TemplateError, operation_template, parse_json
from compiler.imprint.openapi import METHODS
from tests.bench.report import run_alone

DATA = Path(__file__).resolve().parents[1] / "data" / "openapi"
REPEATS = 7
GOAL_MS_PER_OPERATION = 1.0


def _operations(doc: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m, p) for p, item in doc["paths"].items() for m in METHODS if m in item]


def _median_ms(fn: Callable[[], Any]) -> float:
    fn()
    times = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _measure(name: str, docs: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    ops, refused = [], 0
    for _, doc in docs:
        for method, path in _operations(doc):
            try:
                operation_template(doc, method, path)
            except TemplateError:
                refused += 1  # deliberately contradictory schemas (allOf string & integer)
                continue
            ops.append((doc, method, path))

    def template_all() -> None:
        for doc, method, path in ops:
            operation_template(doc, method, path)

    def baseline() -> None:
        for doc, method, path in ops:
            json.dumps(doc["paths"][path][method])

    ms = _median_ms(template_all)
    base = _median_ms(baseline)
    per_op = ms / len(ops)
    label = docs[0][0] if len(docs) == 1 else f"{len(docs)} documents"
    return {
        "name": name,
        "documents": [n for n, _ in docs],
        "operations": len(ops),
        "refused_operations": refused,
        "ms": round(ms, 2),
        "ms_per_operation": round(per_op, 4),
        "baseline": "json.dumps of each operation object",
        "baseline_ms": round(base, 2),
        "ratio_to_baseline": round(ms / base, 2),
        "goal_ms_per_operation": GOAL_MS_PER_OPERATION,
        "meets_goal": per_op <= GOAL_MS_PER_OPERATION,
        "figure": f"{per_op:.3f} ms/operation ({len(ops)} operations, {label})",
        "versus": f"{ms / base:.1f}× baseline ({base:.1f} ms)",
        "goal": f"≤ {GOAL_MS_PER_OPERATION:g} ms/operation",
    }


def run() -> list[dict[str, Any]]:
    files = sorted(DATA.glob("*.json"), key=lambda f: f.stat().st_size, reverse=True)
    docs = [(f.name, parse_json(f.read_bytes(), expect="object")) for f in files]
    return [
        _measure("imprint.templates_largest_document", docs[:1]),
        _measure("imprint.templates_all_documents", docs),
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
