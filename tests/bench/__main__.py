"""`python -m tests.bench`: run every benchmark, print a table, write bench-results.json."""

import json
import platform
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.bench import bench_compile
from workers.runtime import tune_gc

BENCHES = (bench_compile,)
OUT = Path("bench-results.json")


def main() -> int:
    tune_gc()  # the same GC settings as the `forge` CLI and worker
    console = Console()
    results = []
    for bench in BENCHES:
        with console.status(f"running {bench.__name__} …"):
            results.extend(bench.run())
    table = Table(title="Forge benchmarks", title_justify="left")
    for col in ("benchmark", "figure", "ratio", "goal", "ok"):
        table.add_column(col)
    for r in results:
        if "ms" in r:
            figure = f"{r['ms']} ms ({r['ms_per_step']} ms/step, {r['bindings']} bindings)"
            ratio = f"{r['ratio_to_baseline']}× baseline ({r['baseline_ms']} ms)"
            goal = f"≤ {r['goal_ms']} ms" if r["goal_ms"] else "-"
        else:
            figure, ratio = "-", f"{r['ratio_1000_over_100']}× ({r['baseline']})"
            goal = f"≤ {r['goal_ratio']}×"
        ok = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[r["meets_goal"]]
        table.add_row(r["name"], figure, ratio, goal, ok)
    console.print(table)
    OUT.write_text(
        json.dumps(
            {"python": sys.version.split()[0], "machine": platform.machine(), "results": results},
            indent=2,
        )
        + "\n"
    )
    console.print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
