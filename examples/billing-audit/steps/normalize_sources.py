"""Step normalize_sources: canonical field names, ISO dates and numbers for entries and rates."""

import csv
import json
import sys
from datetime import datetime
from decimal import Decimal, InvalidOperation
from pathlib import Path

TIME_ENTRIES = Path("input/time_entries.csv")
RATE_CARDS = Path("input/rate_cards.csv")
PROFILE = Path("output/schema_profile.json")
OUT_ENTRIES = Path("output/normalized_time_entries.json")
OUT_RATES = Path("output/normalized_rate_cards.json")

# Header spellings seen in PSA exports -> canonical billing field (billing-audit synonyms).
SYNONYMS = {
    "hours_worked": "hours",
    "consultant": "consultant_id",
    "employee_id": "consultant_id",
    "client": "client_id",
    "customer_id": "client_id",
    "date": "work_date",
    "rate": "hourly_rate",
    "is_billable": "billable",
    "project": "project_id",
    "notes": "description",
}
ENTRY_REQUIRED = ["entry_id", "consultant_id", "client_id", "work_date", "hours", "billable"]
ENTRY_MONEY = ["billed_rate", "billed_amount"]
RATE_REQUIRED = ["rate_code", "consultant_id", "client_id", "hourly_rate", "effective_from"]
TRUE, FALSE = {"true", "yes", "y", "1"}, {"false", "no", "n", "0"}
DATE_FORMATS = ["%Y-%m-%d", "%m/%d/%Y", "%d.%m.%Y"]


class BadRow(ValueError):
    """A cell that cannot be normalized; the message names the field and value."""


def fail(message: str) -> None:
    print(f"normalize_sources: {message}", file=sys.stderr)
    sys.exit(2)


def canonical(header: str) -> str:
    name = header.strip().lower().replace(" ", "_").replace("-", "_")
    return SYNONYMS.get(name, name)


def read_csv(path: Path, required: list[str]) -> list[dict]:
    if not path.is_file():
        fail(f"missing input {path}")
    with path.open(newline="") as f:
        reader = csv.reader(f)
        header = [canonical(h) for h in next(reader, [])]
        missing = [c for c in required if c not in header]
        if missing:
            fail(f"{path}: missing column(s) {', '.join(missing)} (header: {header})")
        rows = []
        for number, cells in enumerate(reader, start=2):
            if len(cells) != len(header):
                fail(f"{path} line {number}: {len(cells)} cells, expected {len(header)}")
            rows.append({"_line": number, **dict(zip(header, cells, strict=True))})
    return rows


def to_date(value: str, name: str) -> str:
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).date().isoformat()
        except ValueError:
            continue
    raise BadRow(f"{name}={value!r} is not a date")


def to_number(value: str, name: str) -> float:
    try:
        number = Decimal(value.strip().replace("$", "").replace(",", ""))
    except InvalidOperation:
        raise BadRow(f"{name}={value!r} is not a number") from None
    if not number.is_finite():
        raise BadRow(f"{name}={value!r} is not a finite number")
    return float(number)


def to_bool(value: str, name: str) -> bool:
    text = value.strip().lower()
    if text in TRUE | FALSE:
        return text in TRUE
    raise BadRow(f"{name}={value!r} is not a boolean")


def text(row: dict, name: str) -> str:
    value = row[name].strip()
    if not value:
        raise BadRow(f"{name} is empty")
    return value


def entry(row: dict) -> dict:
    hours = to_number(row["hours"], "hours")
    if not 0 <= hours <= 24:
        raise BadRow(f"hours={row['hours']!r} is outside 0..24")
    out = {
        "entry_id": text(row, "entry_id"),
        "consultant_id": text(row, "consultant_id"),
        "client_id": text(row, "client_id"),
        "project_id": row.get("project_id", "").strip(),
        "work_date": to_date(row["work_date"], "work_date"),
        "hours": hours,
        "billable": to_bool(row["billable"], "billable"),
        "description": row.get("description", "").strip(),
    }
    # Blank billed cells mean nothing was billed for the entry.
    for name in ENTRY_MONEY:
        out[name] = to_number(row[name], name) if row.get(name, "").strip() else 0.0
    return out


def rate_card(row: dict) -> dict:
    to = row.get("effective_to", "").strip()
    out = {
        "rate_code": text(row, "rate_code"),
        "consultant_id": text(row, "consultant_id"),
        "client_id": text(row, "client_id"),
        "hourly_rate": to_number(row["hourly_rate"], "hourly_rate"),
        "currency": (row.get("currency", "").strip() or "USD").upper(),
        "effective_from": to_date(row["effective_from"], "effective_from"),
        "effective_to": to_date(to, "effective_to") if to else None,
    }
    if out["hourly_rate"] < 0:
        raise BadRow(f"hourly_rate={row['hourly_rate']!r} is negative")
    if out["effective_to"] and out["effective_to"] < out["effective_from"]:
        raise BadRow("effective_to is before effective_from")
    return out


def normalize(path: Path, rows: list[dict], convert) -> list[dict]:
    out = []
    for row in rows:
        try:
            out.append(convert(row))
        except BadRow as exc:
            fail(f"{path} line {row['_line']}: {exc}")
    return out


def profiled_counts() -> dict[str, int]:
    if not PROFILE.is_file():
        fail(f"missing input {PROFILE}")
    try:
        sources = json.loads(PROFILE.read_text())["sources"]
        return {s["path"]: int(s["row_count"]) for s in sources}
    except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        fail(f"{PROFILE} is malformed: {exc!r}")
    return {}


def main() -> None:
    counts = profiled_counts()
    entries = normalize(TIME_ENTRIES, read_csv(TIME_ENTRIES, ENTRY_REQUIRED), entry)
    rates = normalize(RATE_CARDS, read_csv(RATE_CARDS, RATE_REQUIRED), rate_card)
    # The profile was taken from the same files; a different count means they changed.
    for path, rows in ((TIME_ENTRIES, entries), (RATE_CARDS, rates)):
        if counts.get(str(path)) != len(rows):
            fail(f"{path}: {len(rows)} rows but the schema profile counted {counts.get(str(path))}")
    seen: set[str] = set()
    for e in entries:
        if e["entry_id"] in seen:
            fail(f"{TIME_ENTRIES}: entry_id {e['entry_id']} appears twice")
        seen.add(e["entry_id"])
    OUT_ENTRIES.parent.mkdir(parents=True, exist_ok=True)
    OUT_ENTRIES.write_text(json.dumps(entries, indent=1) + "\n")
    OUT_RATES.write_text(json.dumps(rates, indent=1) + "\n")
    print(f"normalize_sources: {len(entries)} time entries, {len(rates)} rate cards")


if __name__ == "__main__":
    main()
