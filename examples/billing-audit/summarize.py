"""Print the billing audit's outcome: exceptions by kind, the answer-key check, the report path.

Usage: python summarize.py OUTPUTS_DIR ANSWER_KEY.json
OUTPUTS_DIR is where `forge run` copied a run's outputs (FORGE_HOME/outputs/<run>/).
"""

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Table


def main(outputs: Path, answer_key: Path) -> int:
    console = Console()
    summary = json.loads((outputs / "output" / "exception_summary.json").read_text())
    found = json.loads((outputs / "output" / "discrepancies.json").read_text())
    key = json.loads(answer_key.read_text())
    table = Table(title="Billing audit: exceptions by kind", title_justify="left")
    for col, justify in (
        ("kind", "left"),
        ("count", "right"),
        ("billed", "right"),
        ("should be", "right"),
        ("over-billed", "right"),
    ):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in summary:
        table.add_row(
            row["kind"],
            str(row["count"]),
            f"{row['total_billed']:,.2f}",
            f"{row['total_expected']:,.2f}",
            f"{row['total_delta']:,.2f}",
        )
    total = sum(r["total_delta"] for r in summary)
    table.add_row("[bold]total[/]", f"[bold]{len(found)}[/]", "", "", f"[bold]{total:,.2f}[/]")
    console.print(table)
    ours = sorted((d["entry_id"], d["kind"]) for d in found)
    expected = sorted((d["entry_id"], d["kind"]) for d in key)
    if ours == expected:
        console.print(
            f"[green]✓[/] all {len(expected)} seeded discrepancies found, none extra "
            f"(answer key {answer_key})"
        )
    else:
        missed, extra = set(expected) - set(ours), set(ours) - set(expected)
        console.print(f"[red]✗[/] answer key mismatch: {len(missed)} missed, {len(extra)} extra")
    console.print(f"report: {outputs / 'output' / 'billing_audit_report.html'}")
    return 0 if ours == expected else 1


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    sys.exit(main(Path(sys.argv[1]), Path(sys.argv[2])))
