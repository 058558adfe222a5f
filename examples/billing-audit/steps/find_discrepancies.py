"""Step find_discrepancies: compare what was billed with what should have been, one row per problem.

An entry has a discrepancy when billed_amount differs from expected_amount (to the cent). Its
kind is the first that applies: duplicate_entry, non_billable_billed, missing_rate, over_cap,
discount_missing (right rate, full undiscounted amount), rate_mismatch (anything else).
delta = billed_amount − expected_amount, so a positive delta is an overcharge.
"""

import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

APPLICABILITY = Path("output/contract_applicability.json")
ENTRIES = Path("output/normalized_time_entries.json")
OUTPUT = Path("output/discrepancies.json")
CENT = Decimal("0.01")
APPLICABILITY_FIELDS = [
    "entry_id",
    "contract_id",
    "rate_found",
    "applicable_rate",
    "discount_pct",
    "billable",
    "duplicate_of",
    "counts_toward_cap",
    "hours",
    "allowed_hours",
    "expected_amount",
    "amount_capped",
]
ENTRY_FIELDS = [
    "entry_id",
    "client_id",
    "consultant_id",
    "work_date",
    "billed_rate",
    "billed_amount",
]


def fail(message: str) -> None:
    print(f"find_discrepancies: {message}", file=sys.stderr)
    sys.exit(2)


def load_rows(path: Path, required: list[str]) -> dict[str, dict]:
    if not path.is_file():
        fail(f"missing input {path}")
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc}")
    if not isinstance(rows, list):
        fail(f"{path} must be a JSON array of objects")
    by_id = {}
    for i, row in enumerate(rows):
        missing = [k for k in required if not isinstance(row, dict) or k not in row]
        if missing:
            fail(f"{path} row {i}: missing {', '.join(missing)}")
        by_id[row["entry_id"]] = row
    return by_id


def cents(value: object) -> Decimal:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"{value!r} is not a number")
    return Decimal(str(value)).quantize(CENT, rounding=ROUND_HALF_EVEN)


def kind_of(fact: dict, billed_rate: Decimal, billed: Decimal) -> tuple[str, str]:
    """The discrepancy kind and a one-line explanation, by precedence."""
    rate = Decimal(str(fact["applicable_rate"]))
    discount = Decimal(str(fact["discount_pct"]))
    if fact["duplicate_of"]:
        return "duplicate_entry", f"repeats {fact['duplicate_of']}; billed twice"
    if not fact["billable"]:
        return "non_billable_billed", "entry is non-billable but was invoiced"
    if not fact["rate_found"]:
        return "missing_rate", "no rate card in force for this consultant, client and date"
    if fact["allowed_hours"] < fact["hours"] or fact["amount_capped"]:
        why = "hours cap" if fact["allowed_hours"] < fact["hours"] else "amount cap"
        return "over_cap", f"contract {fact['contract_id']} {why} reached; billed in full"
    hours = Decimal(str(fact["hours"]))
    undiscounted = (hours * rate).quantize(CENT, rounding=ROUND_HALF_EVEN)
    if billed_rate == rate and discount > 0 and billed == undiscounted:
        return "discount_missing", f"{discount}% contract discount not applied"
    if billed_rate != rate:
        return "rate_mismatch", f"billed at {billed_rate} instead of {rate} per hour"
    return "rate_mismatch", f"amount does not follow from {rate} per hour less {discount}%"


def main() -> None:
    facts = load_rows(APPLICABILITY, APPLICABILITY_FIELDS)
    entries = load_rows(ENTRIES, ENTRY_FIELDS)
    if set(facts) != set(entries):
        unmatched = sorted(set(facts) ^ set(entries))[:5]
        fail(f"applicability and time entries cover different entries (e.g. {unmatched})")
    rows = []
    for entry_id in sorted(entries):
        entry, fact = entries[entry_id], facts[entry_id]
        try:
            expected, billed = cents(fact["expected_amount"]), cents(entry["billed_amount"])
            billed_rate = cents(entry["billed_rate"])
        except ValueError as exc:
            fail(f"entry {entry_id}: {exc}")
        if billed == expected:
            continue
        kind, notes = kind_of(fact, billed_rate, billed)
        rows.append(
            {
                "discrepancy_id": f"D-{len(rows) + 1:04d}",
                "entry_id": entry_id,
                "kind": kind,
                "expected_amount": float(expected),
                "billed_amount": float(billed),
                "delta": float(billed - expected),
                "notes": notes,
                "client_id": entry["client_id"],
                "consultant_id": entry["consultant_id"],
                "work_date": entry["work_date"],
                "contract_id": fact["contract_id"],
                "duplicate_of": fact["duplicate_of"],
                "hours": fact["hours"],
                "applicable_rate": fact["applicable_rate"],
                "billed_rate": float(billed_rate),
                "currency": fact.get("currency", "USD"),
            }
        )
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps(rows, indent=1) + "\n")
    print(f"find_discrepancies: {len(rows)} discrepancies in {len(entries)} entries")


if __name__ == "__main__":
    main()
