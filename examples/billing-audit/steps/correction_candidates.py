"""Step correction_candidates: one proposed fix of billed_amount per discrepancy."""

import json
import sys
from pathlib import Path

DISCREPANCIES = Path("output/discrepancies.json")
OUTPUT = Path("output/correction_candidates.json")
REQUIRED = ["discrepancy_id", "entry_id", "kind", "expected_amount", "billed_amount", "delta"]
# Why the proposed amount is right, per kind; every kind is fixable by re-billing the entry.
REASONS = {
    "rate_mismatch": "re-bill at the applicable rate card rate less the contract discount",
    "over_cap": "bill only what fits under the contract cap",
    "missing_rate": "no rate card is in force; credit until a rate is agreed",
    "duplicate_entry": "void the duplicate of {duplicate}",
    "non_billable_billed": "credit the non-billable entry",
    "discount_missing": "apply the contract discount",
}


def fail(message: str) -> None:
    print(f"correction_candidates: {message}", file=sys.stderr)
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
        if row["kind"] not in REASONS:
            fail(f"{DISCREPANCIES} row {i}: unknown kind {row['kind']!r}")
    return rows


def main() -> None:
    candidates = []
    for row in load_discrepancies():
        duplicate = row.get("duplicate_of") or "an earlier entry"
        reason = REASONS[row["kind"]].format(duplicate=duplicate)
        candidates.append(
            {
                "entry_id": row["entry_id"],
                "field": "billed_amount",
                "current_value": row["billed_amount"],
                "proposed_value": row["expected_amount"],
                "reason": f"{row['kind']}: {reason}",
                "discrepancy_id": row["discrepancy_id"],
                "kind": row["kind"],
                "adjustment": -row["delta"],
                "client_id": row.get("client_id"),
                "currency": row.get("currency", "USD"),
            }
        )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(candidates, indent=1) + "\n")
    print(f"correction_candidates: {len(candidates)} corrections proposed")


if __name__ == "__main__":
    main()
