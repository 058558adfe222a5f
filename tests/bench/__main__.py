"""`python -m tests.bench`: run every benchmark, print a table, write bench-results.json."""

import json
import platform
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table

from tests.bench import (
    bench_bridge,
    bench_compile,
    bench_context,
    bench_harness,
    bench_imprint,
    bench_ladder,
    bench_receipts,
    bench_recipes,
    bench_sandbox,
)
from workers.runtime import tune_gc

BENCHES = (
    bench_compile,
    bench_receipts,
    bench_sandbox,
    bench_harness,
    bench_ladder,
    bench_imprint,
    bench_recipes,
    bench_context,
    bench_bridge,
)
OUT = Path("bench-results.json")


def main() -> int:
    tune_gc()  # the same GC settings as the `forge` CLI and worker
    console = Console()
    results = []
    for bench in BENCHES:
        with console.status(f"running {bench.__name__} …"):
            results.extend(bench.run())
    table = Table(title="Forge benchmarks", title_justify="left")
    for col in ("benchmark", "figure", "vs baseline (same run)", "goal", "ok"):
        table.add_column(col)
    for r in results:
        ok = {True: "[green]yes[/]", False: "[red]no[/]", None: "-"}[r["meets_goal"]]
        table.add_row(r["name"], r["figure"], r["versus"], r["goal"], ok)
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
