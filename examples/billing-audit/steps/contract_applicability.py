"""Step contract_applicability: contract, rate, discount, caps and expected amount per entry.

Definitions (see examples/billing-audit/generate.py): money(h, r, d) = h × r × (100 − d) / 100
rounded once to the cent, half-even. Duplicates repeat (consultant_id, client_id, project_id,
work_date, hours, description) of an entry with a smaller entry_id. Countable entries (billable,
not duplicate, with a rate in force) consume their contract's caps in (work_date, entry_id)
order; every other entry is expected to bill 0.00.
"""

import json
import sys
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

ENTRIES = Path("output/normalized_time_entries.json")
RATES = Path("output/normalized_rate_cards.json")
CONTRACTS = Path("input/contracts.json")
OUTPUT = Path("output/contract_applicability.json")
CENT = Decimal("0.01")
ZERO = Decimal(0)


def fail(message: str) -> None:
    print(f"contract_applicability: {message}", file=sys.stderr)
    sys.exit(2)


def load_rows(path: Path, required: list[str]) -> list[dict]:
    if not path.is_file():
        fail(f"missing input {path}")
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc}")
    if not isinstance(rows, list):
        fail(f"{path} must be a JSON array of objects")
    for i, row in enumerate(rows):
        missing = [k for k in required if not isinstance(row, dict) or row.get(k) is None]
        if missing:
            fail(f"{path} row {i}: missing {', '.join(missing)}")
    return rows


def dec(value: object, where: str) -> Decimal:
    """An exact decimal from a JSON number (via its shortest repr, so 0.1 stays 0.1)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        fail(f"{where}: {value!r} is not a number")
    return Decimal(str(value))


def day(value: object, where: str) -> date:
    try:
        return date.fromisoformat(str(value))
    except ValueError:
        fail(f"{where}: {value!r} is not an ISO date")
    raise AssertionError  # unreachable: fail() exits


def money(hours: Decimal, rate: Decimal, discount_pct: Decimal) -> Decimal:
    raw = hours * rate * (Decimal(100) - discount_pct) / Decimal(100)
    return raw.quantize(CENT, rounding=ROUND_HALF_EVEN)


def parse_contracts(rows: list[dict]) -> list[dict]:
    contracts = []
    for row in rows:
        where = f"{CONTRACTS} contract {row['contract_id']}"
        caps = {}
        for name in ("cap_hours", "cap_amount"):
            value = row.get(name)
            caps[name] = None if value is None else dec(value, f"{where} {name}")
            if caps[name] is not None and caps[name] < 0:
                fail(f"{where}: {name} is negative")
        discount = dec(row.get("discount_pct", 0), f"{where} discount_pct")
        if not ZERO <= discount <= 100:
            fail(f"{where}: discount_pct {discount} is outside 0..100")
        end = row.get("end_date")
        contracts.append(
            {
                "contract_id": str(row["contract_id"]),
                "client_id": str(row["client_id"]),
                "start": day(row["start_date"], f"{where} start_date"),
                "end": None if end is None else day(end, f"{where} end_date"),
                "discount_pct": discount,
                **caps,
            }
        )
    return contracts


def in_force(start: date, end: date | None, when: date) -> bool:
    return start <= when and (end is None or when <= end)


def applicable_rate(entry: dict, when: date, rates: list[dict]) -> dict | None:
    found = [
        r
        for r in rates
        if (r["consultant_id"], r["client_id"]) == (entry["consultant_id"], entry["client_id"])
        and in_force(
            day(r["effective_from"], r["rate_code"]),
            None if r.get("effective_to") is None else day(r["effective_to"], r["rate_code"]),
            when,
        )
    ]
    if len(found) > 1:  # overlapping cards make the expected amount undefined
        codes = ", ".join(r["rate_code"] for r in found)
        fail(f"entry {entry['entry_id']}: several rate cards in force on {when} ({codes})")
    return found[0] if found else None


def applicable_contract(entry: dict, when: date, contracts: list[dict]) -> dict:
    found = [
        k
        for k in contracts
        if k["client_id"] == entry["client_id"] and in_force(k["start"], k["end"], when)
    ]
    if len(found) != 1:
        ids = ", ".join(k["contract_id"] for k in found) or "none"
        fail(
            f"entry {entry['entry_id']}: expected exactly one contract of {entry['client_id']} "
            f"in force on {when}, found {ids}"
        )
    return found[0]


def duplicate_of(entries: list[dict]) -> dict[str, str]:
    """entry_id -> entry_id of the original (smallest entry_id with the same content)."""
    first: dict[tuple, str] = {}
    duplicates = {}
    for e in sorted(entries, key=lambda e: e["entry_id"]):
        key = tuple(e.get(k) for k in ("consultant_id", "client_id", "project_id"))
        key += (e["work_date"], dec(e["hours"], e["entry_id"]), e.get("description"))
        if key in first:
            duplicates[e["entry_id"]] = first[key]
        else:
            first[key] = e["entry_id"]
    return duplicates


def base_row(entry: dict, rates: list[dict], contracts: list[dict], dup: str | None) -> dict:
    when = day(entry["work_date"], f"entry {entry['entry_id']} work_date")
    rate = applicable_rate(entry, when, rates)
    contract = applicable_contract(entry, when, contracts)
    countable = bool(entry["billable"] is True and dup is None and rate is not None)
    return {
        "entry_id": entry["entry_id"],
        "contract_id": contract["contract_id"],
        "client_id": entry["client_id"],
        "consultant_id": entry["consultant_id"],
        "work_date": when.isoformat(),
        "rate_code": rate["rate_code"] if rate else None,
        "rate_found": rate is not None,
        "applicable_rate": dec(rate["hourly_rate"], rate["rate_code"]) if rate else ZERO,
        "currency": rate.get("currency", "USD") if rate else "USD",
        "discount_pct": contract["discount_pct"],
        "billable": entry["billable"],
        "duplicate_of": dup,
        "counts_toward_cap": countable,
        "hours": dec(entry["hours"], entry["entry_id"]),
        "allowed_hours": ZERO,
        "expected_amount": Decimal("0.00"),
        "amount_capped": False,
        "cap_hours": contract["cap_hours"],
        "cap_amount": contract["cap_amount"],
        "cap_remaining": None,  # hours left under cap_hours after this entry (None: no cap)
        "cap_amount_remaining": None,
    }


def apply_caps(rows: list[dict]) -> None:
    """Consume each contract's caps in (work_date, entry_id) order over countable entries.

    Every row reports the cap left after it; rows that do not count leave the cap unchanged.
    """
    consumed: dict[str, tuple[Decimal, Decimal]] = {}
    for row in sorted(rows, key=lambda r: (r["work_date"], r["entry_id"])):
        cum_hours, cum_amount = consumed.get(row["contract_id"], (ZERO, ZERO))
        if row["counts_toward_cap"]:
            allowed = row["hours"]
            if row["cap_hours"] is not None:
                allowed = min(row["hours"], max(ZERO, row["cap_hours"] - cum_hours))
            full = money(allowed, row["applicable_rate"], row["discount_pct"])
            amount = full
            if row["cap_amount"] is not None:
                amount = min(full, max(ZERO, row["cap_amount"] - cum_amount))
            cum_hours, cum_amount = cum_hours + row["hours"], cum_amount + amount
            consumed[row["contract_id"]] = (cum_hours, cum_amount)
            row.update(allowed_hours=allowed, expected_amount=amount, amount_capped=amount < full)
        if row["cap_hours"] is not None:
            row["cap_remaining"] = max(ZERO, row["cap_hours"] - cum_hours)
        if row["cap_amount"] is not None:
            row["cap_amount_remaining"] = max(ZERO, row["cap_amount"] - cum_amount)


def as_json(value: object) -> object:
    return float(value) if isinstance(value, Decimal) else value


def main() -> None:
    entries = load_rows(ENTRIES, ["entry_id", "consultant_id", "client_id", "work_date", "hours"])
    rates = load_rows(RATES, ["rate_code", "consultant_id", "client_id", "hourly_rate"])
    raw_contracts = load_rows(CONTRACTS, ["contract_id", "client_id", "start_date"])
    contracts = parse_contracts(raw_contracts)
    for e in entries:
        if not isinstance(e.get("billable"), bool):
            fail(f"{ENTRIES} entry {e['entry_id']}: billable must be true or false")
    dups = duplicate_of(entries)
    rows = [base_row(e, rates, contracts, dups.get(e["entry_id"])) for e in entries]
    apply_caps(rows)
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    out = [{k: as_json(v) for k, v in row.items()} for row in rows]
    OUTPUT.write_text(json.dumps(out, indent=1) + "\n")
    missing = sum(1 for r in rows if not r["rate_found"])
    print(
        f"contract_applicability: {len(rows)} entries, {len(dups)} duplicates, "
        f"{missing} without a rate in force"
    )


if __name__ == "__main__":
    main()
