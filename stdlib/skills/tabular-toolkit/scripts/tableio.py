"""Tables in and out for table.py: CSV, TSV, JSON rows and JSONL, and how cells are read.

A table is a header (column names in order) and rows (dicts keyed by those names). Delimited
cells are typed conservatively on read (only text that survives a round trip changes type:
`12`, `-3.5`, `true`, `false`; an empty cell is null), so a CSV written back is the CSV read.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

FORMATS = ("csv", "tsv", "json", "jsonl")
ALIASES = {"json-rows": "json", "json_rows": "json", "ndjson": "jsonl", "tab": "tsv"}
EXTENSIONS = {
    ".csv": "csv",
    ".tsv": "tsv",
    ".tab": "tsv",
    ".json": "json",
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
}
DELIMITERS = {"csv": ",", "tsv": "\t"}
MAX_INPUT_BYTES = 256 * 1024 * 1024
MAX_SAFE_INT = 2**53 - 1
_INT = re.compile(r"[+-]?(?:0|[1-9][0-9]*)")
_NUMBER = re.compile(r"[+-]?(?:(?:0|[1-9][0-9]*)(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
_DATETIME = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[T ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?"
    r"(?:Z|[+-][0-9]{2}:[0-9]{2})?"
)


class TableError(Exception):
    """A problem with an input or output the caller can fix; the message says where."""


@dataclass
class Table:
    path: str
    format: str
    columns: list[str]
    rows: list[dict[str, Any]] = field(default_factory=list)
    where: list[str] = field(default_factory=list)

    def locate(self, index: int) -> str:
        return f"{self.path}, {self.where[index]}"


def format_of(path: str, given: str | None, flag: str) -> str:
    """The table format: `given` (an option value) or the file's extension."""
    if given:
        name = ALIASES.get(given, given)
        if name not in FORMATS:
            raise TableError(f"{flag} {given!r} is not a format; use one of {', '.join(FORMATS)}")
        return name
    found = EXTENSIONS.get(Path(path).suffix.lower())
    if found is None:
        raise TableError(
            f"cannot tell the format of {path} from its extension; name the file .csv, .tsv, "
            f".json or .jsonl, or pass {flag} csv|tsv|json|jsonl"
        )
    return found


def type_cell(text: str) -> Any:
    """A delimited cell as a JSON value: only text that survives a round trip changes type."""
    if text == "":
        return None
    if text in ("true", "false"):
        return text == "true"
    if _INT.fullmatch(text) and not text.startswith("+") and text != "-0":
        number = int(text)
        return number if abs(number) <= MAX_SAFE_INT else text
    if _NUMBER.fullmatch(text) and "." in text and "e" not in text.lower():
        value = float(text)
        if repr(value) == text:
            return value
    return text


def cell_text(value: Any) -> str:
    """A JSON value as delimited text (the inverse of type_cell for what type_cell produces)."""
    if value is None:
        return ""
    if value is True or value is False:
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def as_number(value: Any) -> int | float | None:
    """The number a cell holds (numeric text included), else None; booleans are not numbers."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int | float):
        return value
    if isinstance(value, str):
        text = value.strip()
        if _INT.fullmatch(text):
            return int(text)
        if _NUMBER.fullmatch(text):
            number = float(text)
            return number if math.isfinite(number) else None
    return None


def as_temporal(value: Any) -> date | datetime | None:
    """The ISO 8601 date or date-time a text cell holds, else None."""
    if not isinstance(value, str):
        return None
    text = value.strip()
    try:
        if _DATE.fullmatch(text):
            return date.fromisoformat(text)
        if _DATETIME.fullmatch(text):
            return datetime.fromisoformat(text)
    except ValueError:
        return None
    return None


def midnight(value: date | datetime) -> datetime:
    """A date as its midnight, so dates and naive date-times compare."""
    return value if isinstance(value, datetime) else datetime(value.year, value.month, value.day)


def key_text(value: Any) -> str | None:
    """A value as a join/group key: numbers by value (1 == 1.0 == "1"), text as is."""
    if value is None:
        return None
    number = as_number(value)
    if number is not None:
        return str(int(number)) if float(number).is_integer() else repr(float(number))
    return cell_text(value)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON; write null or a finite number")


def _read_text(path: str) -> str:
    try:
        size = Path(path).stat().st_size
        if size > MAX_INPUT_BYTES:
            raise TableError(
                f"{path}: {size:,} bytes is over the {MAX_INPUT_BYTES:,}-byte limit; split the "
                "file or filter it with another tool first"
            )
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise TableError(f"cannot read {path}: {exc.strerror}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        raise TableError(
            f"{path}, line {line}: byte {exc.start} is not UTF-8; re-save the file as UTF-8"
        ) from None


def read_table(path: str, fmt: str | None = None, *, strings: bool = False) -> Table:
    """Read one table; `strings` keeps every delimited cell as text (empty is still null)."""
    kind = format_of(path, fmt, "--from")
    text = _read_text(path)
    if kind in DELIMITERS:
        return _read_delimited(path, kind, text, strings)
    if kind == "json":
        return _read_json(path, text)
    return _read_jsonl(path, text)


def _check_header(path: str, header: list[str]) -> None:
    seen: dict[str, int] = {}
    for i, name in enumerate(header, start=1):
        if not name.strip():
            raise TableError(f"{path}, line 1: column {i} of the header has no name; name it")
        if name in seen:
            raise TableError(
                f"{path}, line 1: column name {name!r} appears twice (columns {seen[name]} and "
                f"{i}); rename one"
            )
        seen[name] = i


def _read_delimited(path: str, kind: str, text: str, strings: bool) -> Table:
    delimiter = DELIMITERS[kind]
    csv.field_size_limit(16 * 1024 * 1024)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None:
            raise TableError(f"{path} is empty; a header row with the column names is required")
        _check_header(path, header)
        table = Table(path, kind, header)
        for record in reader:
            if not record:
                continue
            n = len(table.rows) + 1
            if len(record) != len(header):
                raise TableError(
                    f"{path}, row {n} (line {reader.line_num}): {len(record)} fields but the "
                    f"header has {len(header)} columns; quote cells that contain "
                    f"{'a tab' if kind == 'tsv' else 'a comma'}, or fix the row"
                )
            cells = [(c or None) if strings else type_cell(c) for c in record]
            table.rows.append(dict(zip(header, cells, strict=True)))
            table.where.append(f"row {n} (line {reader.line_num})")
    except csv.Error as exc:
        raise TableError(
            f"{path}, line {reader.line_num}: not valid {kind.upper()} ({exc}); check the quoting"
        ) from None
    return table


def _rows_from_objects(path: str, kind: str, items: list[tuple[Any, str]]) -> Table:
    columns: dict[str, None] = {}
    for item, where in items:
        if not isinstance(item, dict):
            raise TableError(
                f"{path}, {where}: a {type(item).__name__}, but every row must be a JSON object "
                '(e.g. {"id": 1, "name": "a"})'
            )
        columns.update(dict.fromkeys(item))
    table = Table(path, kind, list(columns))
    for item, where in items:
        table.rows.append({c: item.get(c) for c in table.columns})
        table.where.append(where)
    return table


def _read_json(path: str, text: str) -> Table:
    try:
        document = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise TableError(
            f"{path}, line {exc.lineno}, column {exc.colno}: invalid JSON ({exc.msg})"
        ) from None
    except ValueError as exc:
        raise TableError(f"{path}: {exc}") from None
    if not isinstance(document, list):
        raise TableError(
            f"{path}: the top level is a {type(document).__name__}; JSON rows are an array of "
            "objects (use .jsonl for one object per line)"
        )
    return _rows_from_objects(path, "json", [(r, f"row {i}") for i, r in enumerate(document, 1)])


def _read_jsonl(path: str, text: str) -> Table:
    items = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            item = json.loads(line, parse_constant=_refuse_constant)
        except json.JSONDecodeError as exc:
            raise TableError(f"{path}, line {number}: invalid JSON ({exc.msg})") from None
        except ValueError as exc:
            raise TableError(f"{path}, line {number}: {exc}") from None
        items.append((item, f"row {len(items) + 1} (line {number})"))
    return _rows_from_objects(path, "jsonl", items)


def write_table(
    columns: list[str], rows: list[dict[str, Any]], path: str, fmt: str | None, inputs: list[str]
) -> str:
    """Write rows (keyed by `columns`) to `path`; returns the format written."""
    kind = format_of(path, fmt, "--to")
    target = Path(path)
    if any(target.resolve() == Path(i).resolve() for i in inputs):
        raise TableError(f"--out {path} is an input file; write the result to a new file")
    if kind in DELIMITERS:
        buffer = io.StringIO()
        writer = csv.writer(buffer, delimiter=DELIMITERS[kind], lineterminator="\n")
        writer.writerow(columns)
        writer.writerows([cell_text(row.get(c)) for c in columns] for row in rows)
        data = buffer.getvalue()
    elif kind == "json":
        ordered = [{c: row.get(c) for c in columns} for row in rows]
        data = json.dumps(ordered, indent=2, ensure_ascii=False) + "\n"
    else:
        data = "".join(
            json.dumps({c: row.get(c) for c in columns}, ensure_ascii=False) + "\n" for row in rows
        )
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(data, encoding="utf-8")
    except OSError as exc:
        raise TableError(
            f"cannot write {path}: {exc.strerror}; write under /workspace/output or "
            "/workspace/work (the skill directory is read-only)"
        ) from None
    return kind
