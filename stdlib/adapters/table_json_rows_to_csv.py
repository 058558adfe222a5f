"""Adapter: table.json_rows -> table.csv (columns are the union of keys in first-seen order)."""

from __future__ import annotations

import csv
import json
import pathlib
import sys
from typing import Any


def _reject_constant(name: str) -> Any:
    # json.load accepts NaN/Infinity by default, which no CSV consumer can read back.
    raise ValueError(f"non-standard JSON constant {name} is not allowed")


def format_cell(value: Any) -> str:
    """Render one scalar as CSV text, the inverse of the CSV adapter's typing."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        # repr is the shortest text that parses back to the same float.
        return repr(value)
    return str(value)


def load_rows(src: pathlib.Path) -> list[dict[str, Any]]:
    """Load and check a JSON array of flat objects."""
    with src.open(encoding="utf-8-sig") as handle:
        data = json.load(handle, parse_constant=_reject_constant)
    if not isinstance(data, list):
        raise ValueError(f"expected a JSON array of objects, got {type(data).__name__}")
    for index, row in enumerate(data):
        if not isinstance(row, dict):
            raise ValueError(f"row index {index}: expected an object, got {type(row).__name__}")
        for key, value in row.items():
            if isinstance(value, dict | list):
                raise ValueError(
                    f"row index {index}: field {key!r} is a nested {type(value).__name__}; "
                    "only flat objects can become CSV rows"
                )
    return data


def transform(src: pathlib.Path, dst: pathlib.Path) -> dict[str, Any]:
    """Convert the JSON rows file at src into a CSV file at dst and summarise it."""
    rows = load_rows(pathlib.Path(src))
    # A dict keeps insertion order, so it doubles as an ordered set of column names.
    columns = list(dict.fromkeys(key for row in rows for key in row))
    with pathlib.Path(dst).open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle, lineterminator="\n")
        if columns:
            writer.writerow(columns)
        for row in rows:
            writer.writerow([format_cell(row.get(name)) for name in columns])
    return {"rows": len(rows), "columns": columns}


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {pathlib.Path(__file__).name} SRC DST")
    print(json.dumps(transform(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))))
