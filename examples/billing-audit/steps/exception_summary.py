"""Step exception_summary: discrepancies aggregated by kind (count, total delta, amounts)."""

import json
import sys
from decimal import Decimal
from pathlib import Path

DISCREPANCIES = Path("output/discrepancies.json")
OUTPUT = Path("output/exception_summary.json")
KINDS = [
    "rate_mismatch",
    "over_cap",
    "missing_rate",
    "duplicate_entry",
    "non_billable_billed",
    "discount_missing",
]
REQUIRED = ["entry_id", "kind", "expected_amount", "billed_amount", "delta"]


def fail(message: str) -> None:
    print(f"exception_summary: {message}", file=sys.stderr)
    sys.exit(2)


def load_discrepancies() -> list[dict]:
    if not DISCREPANCIES.is_file():
        fail(f"missing input {DISCREPANCIES}")
    try:
        rows = json.loads(DISCREPANCIES.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{DISCREPANCIES} is not valid JSON: {exc}")
    if not isinstance(rows, list):
        fail(f"{DISCREPANCIES} must be a JSON array of discrepancy rows")
    for i, row in enumerate(rows):
        missing = [k for k in REQUIRED if not isinstance(row, dict) or k not in row]
        if missing:
            fail(f"{DISCREPANCIES} row {i}: missing {', '.join(missing)}")
        if row["kind"] not in KINDS:
            fail(f"{DISCREPANCIES} row {i}: unknown kind {row['kind']!r}")
    return rows


def main() -> None:
    rows = load_discrepancies()
    summary = []
    # Every kind gets a row, zero included, so readers see what was checked and found clean.
    for kind in KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        total = {k: sum((Decimal(str(r[k])) for r in mine), Decimal(0)) for k in REQUIRED[2:]}
        summary.append(
            {
                "kind": kind,
                "count": len(mine),
                "total_delta": float(total["delta"]),
                "total_expected": float(total["expected_amount"]),
                "total_billed": float(total["billed_amount"]),
                "currency": mine[0].get("currency", "USD") if mine else "USD",
            }
        )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(summary, indent=1) + "\n")
    kinds = sum(1 for s in summary if s["count"])
    print(f"exception_summary: {len(rows)} discrepancies in {kinds} kinds")


if __name__ == "__main__":
    main()
