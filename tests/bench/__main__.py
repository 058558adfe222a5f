"""`python -m tests.bench [NAME ...] [--repeat N]`: run benchmarks, print a table, write JSON.

NAME selects benchmarks by module suffix (`harness` for bench_harness); all by default, but for
those ON_REQUEST, run only when named. With
--repeat N each benchmark runs N times and each figure reported is the run with the median
ratio to its baseline (the machine is noisy; one run proves little); every run's ratio is kept
in `repeats` in bench-results.json.
"""

import argparse
import json
import platform
import statistics
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from tests.bench import (
    bench_api,
    bench_bounds,
    bench_bridge,
    bench_capsule,
    bench_cli,
    bench_compile,
    bench_context,
    bench_guard,
    bench_harness,
    bench_imprint,
    bench_ladder,
    bench_noisy,
    bench_receipts,
    bench_recipes,
    bench_sandbox,
    bench_scale,
    bench_scale_sizing,
    bench_telemetry,
    bench_tenancy,
)
from workers.process.runtime import tune_gc

BENCHES = (
    bench_compile,
    bench_receipts,
    bench_sandbox,
    bench_harness,
    bench_telemetry,
    bench_ladder,
    bench_guard,
    bench_imprint,
    bench_recipes,
    bench_bounds,
    bench_context,
    bench_bridge,
    bench_capsule,
    bench_api,
    bench_tenancy,
    bench_noisy,
    bench_cli,
    bench_scale,
)
# Run only when named: `make bench BENCH=scale_sizing` (about 20 minutes of its own).
ON_REQUEST = (bench_scale_sizing,)
OUT = Path("bench-results.json")


def _median_runs(runs: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """Per figure, the run whose ratio (or ms per step) is the median of all runs."""
    merged = []
    for same in zip(*runs, strict=True):
        if "requests" in same[0]:  # a count whose goal is none at all: the worst repeat shows
            worst = dict(max(same, key=lambda r: r["requests"]))
            worst["repeats"] = {"of": "requests", "values": [r["requests"] for r in same]}
            worst["figure"] += f" (most of {len(same)})"
            merged.append(worst)
            continue
        key = next((k for k in ("ratio_to_baseline", "ms_per_step") if k in same[0]), None)
        if key is None:
            merged.append(same[-1])
            continue
        values = [r[key] for r in same]
        median = statistics.median_low(values)
        chosen = dict(same[values.index(median)])
        chosen["repeats"] = {"of": key, "values": values, "median": median}
        chosen["figure"] += f" (median of {len(same)})"
        merged.append(chosen)
    return merged


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.bench")
    parser.add_argument("names", nargs="*", help="e.g. harness sandbox (default: all)")
    parser.add_argument("--repeat", type=int, default=1, metavar="N")
    args = parser.parse_args(argv)
    known = {b.__name__.rsplit(".bench_", 1)[-1]: b for b in (*BENCHES, *ON_REQUEST)}
    unknown = sorted(set(args.names) - set(known))
    if unknown or args.repeat < 1:
        parser.error(
            f"unknown benchmark(s) {', '.join(unknown)}; known: {', '.join(known)}"
            if unknown
            else "--repeat needs a whole number of 1 or more"
        )
    chosen = [known[n] for n in args.names] if args.names else list(BENCHES)
    tune_gc()  # the same GC settings as the `forge` CLI and worker
    console = Console()
    results = []
    for bench in chosen:
        runs = []
        for i in range(args.repeat):
            label = f" ({i + 1}/{args.repeat})" if args.repeat > 1 else ""
            with console.status(f"running {bench.__name__}{label} …"):
                runs.append(bench.run())
        results.extend(_median_runs(runs) if args.repeat > 1 else runs[0])
    table = Table(title="Forge benchmarks", title_justify="left")
    for col in ("benchmark", "figure", "vs baseline (same run)", "goal", "ok"):
        table.add_column(col)
    for r in results:
        ok = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[r["meets_goal"]]
        table.add_row(r["name"], r["figure"], r["versus"], r["goal"], ok)
    console.print(table)
    if args.names:  # a selection updates its figures and keeps the others' last results
        names = {r["name"] for r in results}
        kept = json.loads(OUT.read_text())["results"] if OUT.exists() else []
        results = [r for r in kept if r["name"] not in names] + results
    OUT.write_text(
        json.dumps(
            {"python": sys.version.split()[0], "machine": platform.machine(), "results": results},
            indent=2,
        )
        + "\n"
    )
    console.print(f"{'updated' if args.names else 'wrote'} {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
