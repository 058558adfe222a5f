"""`table.py profile`: per column, the inferred type, null and distinct counts, min and max.

The output matches profile.schema.json (the skill's forge-output-schema); REFERENCE.md lists
the inference rules.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tableio import Table, as_number, as_temporal, cell_text, midnight


def _kind(value: Any) -> tuple[str, Any]:
    """(kind, comparable) of one non-null cell."""
    if isinstance(value, bool):
        return "boolean", value
    if isinstance(value, int | float):
        return ("integer" if isinstance(value, int) else "number"), value
    if isinstance(value, dict | list):
        return "json", None
    text = value.strip()
    if text in ("true", "false", "True", "False", "TRUE", "FALSE"):
        return "boolean", text.lower() == "true"
    number = as_number(text)
    if number is not None:
        return ("integer" if isinstance(number, int) else "number"), number
    moment = as_temporal(text)
    if moment is None:
        return "string", None
    if not isinstance(moment, datetime):
        return "date", moment
    return ("datetimetz" if moment.tzinfo else "datetime"), moment


def _column_type(kinds: set[str]) -> str:
    if not kinds:
        return "empty"
    if len(kinds) == 1:
        (only,) = kinds
        return "datetime" if only == "datetimetz" else only
    if kinds == {"integer", "number"}:
        return "number"
    if kinds == {"date", "datetime"}:
        return "datetime"
    return "string"


def profile_column(table: Table, name: str) -> dict[str, Any]:
    nulls, distinct, kinds = 0, set(), set()
    seen: list[tuple[Any, Any]] = []
    for row in table.rows:
        value = row.get(name)
        if value is None or (isinstance(value, str) and not value.strip()):
            nulls += 1
            continue
        distinct.add(cell_text(value))
        kind, comparable = _kind(value)
        kinds.add(kind)
        seen.append((comparable, value))
    column: dict[str, Any] = {
        "name": name,
        "type": _column_type(kinds),
        "nulls": nulls,
        "distinct": len(distinct),
    }
    if column["type"] in ("integer", "number"):
        numbers = [c for c, _ in seen]
        column["min"], column["max"] = min(numbers), max(numbers)
    elif column["type"] in ("date", "datetime"):
        # A date among date-times sorts as its midnight; min/max keep the cell's own text.
        keyed = sorted(((midnight(c), str(v).strip()) for c, v in seen), key=lambda p: p[0])
        column["min"], column["max"] = keyed[0][1], keyed[-1][1]
    return column


def profile(table: Table) -> dict[str, Any]:
    return {
        "source": table.path,
        "format": table.format,
        "rows": len(table.rows),
        "columns": [profile_column(table, name) for name in table.columns],
    }
