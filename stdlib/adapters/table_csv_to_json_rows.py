"""Adapter: table.csv -> table.json_rows (a JSON array of flat objects, one per record)."""

from __future__ import annotations

import csv
import json
import pathlib
import re
import sys
from collections.abc import Sequence
from typing import Any

DELIMITER = ","

# Plain decimal notation only: a leading zero, sign-prefixed "+", exponent or non-ASCII digits
# means the text is an identifier or a formatted value, and must stay a string.
_INT_RE = re.compile(r"-?(?:0|[1-9][0-9]*)")
_DECIMAL_RE = re.compile(r"-?(?:0|[1-9][0-9]*)\.[0-9]+")
# Beyond 2**53 a JSON number is no longer exact for most consumers (JavaScript, jq, DuckDB
# doubles), so a longer integer is safer as its original text.
_MAX_SAFE_INT = 2**53 - 1


def type_cell(text: str | None) -> Any:
    """Type one cell conservatively: only values whose text survives a round trip change type."""
    if text is None or text == "":
        return None
    lowered = text.lower()
    if lowered == "true":
        return True
    if lowered == "false":
        return False
    if _INT_RE.fullmatch(text):
        number = int(text)
        # "-0" parses but would come back as "0".
        if str(number) == text and abs(number) <= _MAX_SAFE_INT:
            return number
        return text
    if _DECIMAL_RE.fullmatch(text):
        value = float(text)
        # repr is the shortest exact form, so "1.50" or "0.10000000000000001" stay strings.
        if repr(value) == text:
            return value
    return text


def check_header(fieldnames: Sequence[str] | None) -> list[str]:
    """Return the header, refusing a missing header and empty or duplicate column names."""
    if not fieldnames:
        raise ValueError("a header row is required but the file is empty")
    seen: dict[str, int] = {}
    for index, name in enumerate(fieldnames):
        if name.strip() == "":
            raise ValueError(f"header column index {index} (0-based) has an empty name")
        if name in seen:
            raise ValueError(
                f"header column index {index} (0-based) duplicates column index "
                f"{seen[name]}: {name!r}"
            )
        seen[name] = index
    return list(fieldnames)


def read_rows(src: pathlib.Path, delimiter: str) -> tuple[list[str], list[dict[str, Any]]]:
    """Read a delimited file into typed rows keyed in header order."""
    # utf-8-sig drops the BOM spreadsheet exports prepend, which would otherwise corrupt the
    # first column name; newline="" lets the csv module handle newlines inside quoted fields.
    with src.open(encoding="utf-8-sig", newline="") as handle:
        reader = csv.DictReader(handle, delimiter=delimiter)
        columns = check_header(reader.fieldnames)
        rows: list[dict[str, Any]] = []
        for record in reader:
            # DictReader files surplus fields under the restkey (None by default).
            if None in record:
                raise ValueError(
                    f"line {reader.line_num}: record has {len(columns) + len(record[None])} "
                    f"fields but the header has {len(columns)}"
                )
            # Short records get None from DictReader; they become null like empty cells.
            rows.append({name: type_cell(record[name]) for name in columns})
    return columns, rows


def transform(src: pathlib.Path, dst: pathlib.Path) -> dict[str, Any]:
    """Convert the CSV file at src into a JSON rows file at dst and summarise it."""
    columns, rows = read_rows(pathlib.Path(src), DELIMITER)
    text = json.dumps(rows, ensure_ascii=False, indent=2, allow_nan=False)
    pathlib.Path(dst).write_text(text + "\n", encoding="utf-8")
    return {"rows": len(rows), "columns": columns}


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {pathlib.Path(__file__).name} SRC DST")
    print(json.dumps(transform(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))))
