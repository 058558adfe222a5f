"""Schema summaries for receipts: value types, per-column statistics and candidate keys."""

from __future__ import annotations

import datetime as dt
import json
import re
from array import array
from collections.abc import Mapping
from itertools import combinations
from typing import Any

# Bounds that keep a summary small enough to store in a receipt whatever the file holds.
MAX_COLUMNS = 1000
MAX_KEYS = 1000
# Composite keys are only sought among this many never-null columns (28 pairs at most).
MAX_PAIR_COLUMNS = 8

_INT = re.compile(r"[+-]?(?:0|[1-9]\d*)")
_NUMBER = re.compile(r"[+-]?(?:(?:0|[1-9]\d*)(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
_DATETIME = re.compile(
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:?\d{2})?"
)
_BOOLEANS = frozenset({"true", "false"})


def string_type(text: str) -> str:
    """`date`, `datetime` or `string`: what an ISO-8601-looking string actually holds."""
    if len(text) == 10 and _DATE.fullmatch(text):
        try:
            dt.date.fromisoformat(text)
        except ValueError:  # 2024-02-30 looks like a date but is not one
            return "string"
        return "date"
    if 16 <= len(text) <= 40 and _DATETIME.fullmatch(text):
        try:
            dt.datetime.fromisoformat(text)
        except ValueError:
            return "string"
        return "datetime"
    return "string"


def value_type(value: Any) -> str:
    """The type name of one parsed JSON/YAML value."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before int: bool is a subclass of int
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return string_type(value)
    if isinstance(value, dt.datetime):  # YAML timestamps; before date, its base class
        return "datetime"
    if isinstance(value, dt.date):
        return "date"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "string"


def text_type(text: str) -> str:
    """The type a CSV/TSV cell's text reads as; the empty string is null."""
    if not text:
        return "null"
    if _INT.fullmatch(text):  # leading zeros ("007", ZIP codes) stay strings: they are labels
        return "integer"
    if _NUMBER.fullmatch(text):
        return "number"
    if text.lower() in _BOOLEANS:
        return "boolean"
    return string_type(text)


def merge_types(types: set[str], *, text: bool) -> str:
    """One type for a column. In text tables any mix with strings is a string column."""
    if not types:
        return "null"
    if len(types) == 1:
        return next(iter(types))
    if types <= {"integer", "number"}:
        return "number"
    if types <= {"date", "datetime"}:
        return "datetime"
    return "string" if text else "mixed"


def _identity(value: Any) -> int:
    """A 64-bit identity for uniqueness checks; the type is part of it so 1, 1.0, True differ."""
    if isinstance(value, dict | list):
        value = json.dumps(value, sort_keys=True, default=str)
    return hash((type(value).__name__, value))


class ColumnStats:
    """Types, null counts and value identities per column, fed one row at a time.

    Only hashes of never-null columns are kept (8 bytes a cell), so a 100,000-row sample of a
    wide table stays in the tens of megabytes; uniqueness is judged on those hashes.
    """

    def __init__(self, *, text: bool) -> None:
        self.text = text
        self.order: list[str] = []
        self.types: dict[str, set[str]] = {}
        self.nulls: dict[str, int] = {}
        self.hashes: dict[str, array[int]] = {}
        self.rows = 0
        self.truncated = False

    def _known(self, name: str) -> bool:
        if name in self.types:
            return True
        if len(self.order) >= MAX_COLUMNS:
            self.truncated = True
            return False
        self.order.append(name)
        self.types[name] = set()
        # Absent from every earlier row: those count as nulls, and the column cannot be a key.
        self.nulls[name] = self.rows
        if self.rows == 0:
            self.hashes[name] = array("q")
        return True

    def _null(self, name: str) -> None:
        self.nulls[name] += 1
        self.hashes.pop(name, None)

    def add(self, row: Mapping[Any, Any]) -> None:
        """Record one row (a JSON object, or a CSV record keyed by header)."""
        seen = 0
        for key, value in row.items():
            name = str(key)
            if not self._known(name):
                continue
            seen += 1
            if value is None or (self.text and value == ""):
                self._null(name)
                continue
            types = self.types[name]
            if not (self.text and "string" in types):  # a text column stays a string column
                types.add(text_type(value) if self.text else value_type(value))
            column = self.hashes.get(name)
            if column is not None:
                column.append(_identity(value))
        if seen < len(self.order):
            for name in self.order:
                if name not in row:
                    self._null(name)
        self.rows += 1

    def candidate_keys(self) -> list[list[str]]:
        """Never-null columns unique over the sampled rows; pairs only if no single one is."""
        if self.rows == 0:
            return []
        full = [name for name in self.order if name in self.hashes]
        singles = [[name] for name in full if len(set(self.hashes[name])) == self.rows]
        if singles or self.rows < 2:
            return singles
        return [
            [a, b]
            for a, b in combinations(full[:MAX_PAIR_COLUMNS], 2)
            if len(set(zip(self.hashes[a], self.hashes[b], strict=True))) == self.rows
        ]

    def summary(self) -> dict[str, Any]:
        columns = [
            {
                "name": name,
                "type": merge_types(self.types[name], text=self.text),
                "null_count": self.nulls[name],
            }
            for name in self.order
        ]
        out: dict[str, Any] = {"columns": columns, "candidate_keys": self.candidate_keys()}
        if self.truncated:
            out["columns_truncated"] = True
        return out


def summarize_rows(rows: list[Any], *, max_rows: int) -> dict[str, Any]:
    """A JSON/YAML array: row count, and column statistics when every sampled item is an object."""
    sample = rows[:max_rows]
    out: dict[str, Any] = {
        "type": "array",
        "row_count": len(rows),
        "rows_sampled": len(sample),
    }
    if sample and all(isinstance(item, dict) for item in sample):
        stats = ColumnStats(text=False)
        for item in sample:
            stats.add(item)
        out.update(stats.summary())
    else:
        out["item_type"] = merge_types({value_type(item) for item in sample}, text=False)
        out.update({"columns": [], "candidate_keys": []})
    return out


def summarize_document(doc: Any, *, max_rows: int) -> dict[str, Any]:
    """The summary of a parsed JSON or YAML document."""
    if isinstance(doc, dict):
        keys = sorted(doc, key=str)[:MAX_KEYS]
        out: dict[str, Any] = {
            "type": "object",
            "key_count": len(doc),
            "keys": [str(k) for k in keys],
            "key_types": {str(k): value_type(doc[k]) for k in keys},
        }
        if len(doc) > MAX_KEYS:
            out["keys_truncated"] = True
        return out
    if isinstance(doc, list):
        return summarize_rows(doc, max_rows=max_rows)
    return {"type": value_type(doc)}
