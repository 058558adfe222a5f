"""Step profile_sources: columns, inferred types, row counts and candidate keys of each input."""

import csv
import json
import re
import sys
from itertools import combinations
from pathlib import Path

SOURCES = [
    ("time_entries", Path("input/time_entries.csv")),
    ("rate_cards", Path("input/rate_cards.csv")),
    ("contracts", Path("input/contracts.json")),
]
OUTPUT = Path("output/schema_profile.json")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
INTEGER = re.compile(r"^[+-]?\d+$")
NUMBER = re.compile(r"^[+-]?(\d+\.\d*|\.\d+|\d+)$")
BOOLEANS = {"true", "false", "yes", "no", "y", "n"}


def fail(message: str) -> None:
    print(f"profile_sources: {message}", file=sys.stderr)
    sys.exit(2)


def read_csv(path: Path) -> tuple[list[str], list[dict]]:
    if not path.is_file():
        fail(f"missing input {path}")
    with path.open(newline="") as f:
        reader = csv.DictReader(f)
        if not reader.fieldnames:
            fail(f"{path} has no header row")
        columns = list(reader.fieldnames)
        rows = list(reader)
    for number, row in enumerate(rows, start=2):
        if None in row or None in row.values():  # too many or too few cells on the line
            fail(f"{path} line {number}: expected {len(columns)} cells")
    return columns, rows


def read_json_rows(path: Path) -> tuple[list[str], list[dict]]:
    if not path.is_file():
        fail(f"missing input {path}")
    try:
        rows = json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        fail(f"{path} is not valid JSON: {exc}")
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        fail(f"{path} must be a JSON array of objects")
    columns: list[str] = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    return columns, rows


def cell_type(value: object) -> str | None:
    """The narrowest type of one cell; None for an empty cell."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if not isinstance(value, str):
        return type(value).__name__
    if value.lower() in BOOLEANS:
        return "boolean"
    if INTEGER.match(value):
        return "integer"
    if NUMBER.match(value):
        return "number"
    return "date" if DATE.match(value) else "string"


def column_type(types: set[str]) -> str:
    if not types:
        return "empty"
    if types <= {"integer", "number"}:  # integers widen to numbers
        return "number" if "number" in types else "integer"
    return types.pop() if len(types) == 1 else "string"


def candidate_keys(columns: list[str], rows: list[dict]) -> list[list[str]]:
    """Single columns that are unique and never empty; otherwise the unique column pairs."""

    def unique(cols: tuple[str, ...]) -> bool:
        values = [tuple(row.get(c) for c in cols) for row in rows]
        complete = all(v not in (None, "") for value in values for v in value)
        return complete and len(set(values)) == len(values)

    singles = [[c] for c in columns if unique((c,))]
    if singles:
        return singles
    return [list(pair) for pair in combinations(columns, 2) if unique(pair)]


def profile(source: str, path: Path) -> dict:
    reader = read_json_rows if path.suffix == ".json" else read_csv
    columns, rows = reader(path)
    described = []
    for name in columns:
        values = [row.get(name) for row in rows]
        types = {t for t in map(cell_type, values) if t is not None}
        hashable = [json.dumps(v, sort_keys=True) for v in values]
        described.append(
            {
                "name": name,
                "inferred_type": column_type(types),
                "null_count": sum(1 for v in values if v in (None, "")),
                "distinct_count": len(set(hashable)),
            }
        )
    return {
        "source": source,
        "path": str(path),
        "format": "json" if path.suffix == ".json" else "csv",
        "columns": described,
        "row_count": len(rows),
        "candidate_keys": candidate_keys(columns, rows),
    }


def main() -> None:
    profiles = [profile(source, path) for source, path in SOURCES]
    OUTPUT.parent.mkdir(parents=True, exist_ok=True)
    OUTPUT.write_text(json.dumps({"sources": profiles}, indent=2) + "\n")
    counts = ", ".join(f"{p['source']}={p['row_count']}" for p in profiles)
    print(f"profile_sources: profiled {len(profiles)} sources ({counts})")


if __name__ == "__main__":
    main()
