#!/usr/bin/env python3
"""Profile, filter, join, aggregate and convert tables (CSV, TSV, JSON rows, JSONL).

    python table.py profile INPUT [--out PROFILE.json]
    python table.py filter INPUT --where 'COL OP VALUE' [--where ...] --out OUT
    python table.py join --left A --right B --on KEY[,KEY...] [--how inner|left] --out OUT
    python table.py aggregate INPUT [--group-by COL ...] --agg FUNC:COL [...] --out OUT
    python table.py convert INPUT --out OUT

Formats follow the file extensions (.csv .tsv .json .jsonl) unless --from / --to say otherwise.
Output order is deterministic. Exit 0: done (a JSON summary on stdout; `profile` without --out
prints the profile); 1: an input or output problem, named by file, row and column on stderr;
2: bad arguments.
"""

from __future__ import annotations

import argparse
import json
import math
import operator
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.dont_write_bytecode = True  # the skill directory is read-only: no __pycache__ beside us
sys.path.insert(0, str(Path(__file__).resolve().parent))
from tableio import (  # noqa: E402
    Table,
    TableError,
    as_number,
    as_temporal,
    cell_text,
    key_text,
    midnight,
    read_table,
    write_table,
)
from tableprofile import profile  # noqa: E402

_WHERE = re.compile(r"^\s*(?P<col>.+?)\s+(?P<op>==|=|!=|<=|>=|<|>|contains)\s+(?P<val>.*?)\s*$")
_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
AGG_FUNCS = ("count", "distinct", "sum", "mean", "min", "max")


def _require(table: Table, column: str, purpose: str) -> None:
    if column not in table.columns:
        raise TableError(
            f"{table.path}: no column {column!r} ({purpose}); its columns are "
            f"{', '.join(repr(c) for c in table.columns) or 'none'}"
        )


# --- filter -----------------------------------------------------------------------------------


def parse_where(expr: str) -> tuple[str, str, str]:
    m = _WHERE.match(expr)
    if not m:
        raise TableError(
            f"--where {expr!r} is not 'COLUMN OP VALUE'; OP is one of = != < <= > >= contains "
            "(e.g. --where 'amount >= 100')"
        )
    value = m.group("val")
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
        value = value[1:-1]
    return m.group("col"), m.group("op"), value


def _condition(table: Table, expr: str) -> Callable[[int, dict[str, Any]], bool]:
    column, op, raw = parse_where(expr)
    _require(table, column, f"named in --where {expr!r}")
    target_number = as_number(raw)
    target_time = as_temporal(raw) if target_number is None else None

    def ordered(i: int, value: Any) -> bool:
        if target_number is not None:
            number = as_number(value)
            if number is None:
                _mismatch(table, i, column, value, expr, "a number")
            return _ORDER[op](number, target_number)
        if target_time is not None:
            moment = as_temporal(value)
            if moment is None:
                _mismatch(table, i, column, value, expr, "an ISO 8601 date")
            try:
                return _ORDER[op](midnight(moment), midnight(target_time))
            except TypeError:
                _mismatch(table, i, column, value, expr, "comparable (one has a time zone)")
        return _ORDER[op](cell_text(value), raw)

    def test(i: int, row: dict[str, Any]) -> bool:
        value = row.get(column)
        if op == "contains":
            return value is not None and raw in cell_text(value)
        if op in ("=", "==", "!="):
            if value is None:
                equal = raw == ""
            elif target_number is not None and as_number(value) is not None:
                equal = as_number(value) == target_number
            else:
                equal = cell_text(value) == raw
            return equal if op != "!=" else not equal
        return value is not None and ordered(i, value)

    return test


def _mismatch(table: Table, i: int, column: str, value: Any, expr: str, wanted: str) -> None:
    raise TableError(
        f"{table.locate(i)}, column {column!r}: {cell_text(value)!r} is not {wanted}, but "
        f"--where {expr!r} compares it as one; fix the cell, or drop such rows first "
        f"(--where '{column} != {cell_text(value)}')"
    )


def filter_rows(table: Table, where: list[str]) -> list[dict[str, Any]]:
    tests = [_condition(table, expr) for expr in where]
    return [row for i, row in enumerate(table.rows) if all(t(i, row) for t in tests)]


# --- join -------------------------------------------------------------------------------------


def parse_keys(spec: str) -> list[tuple[str, str]]:
    pairs = []
    for part in spec.split(","):
        left, _, right = part.partition("=")
        if not left.strip() or (_ and not right.strip()):
            raise TableError(f"--on {spec!r}: write KEY, KEY1,KEY2 or LEFT_KEY=RIGHT_KEY")
        pairs.append((left.strip(), (right or left).strip()))
    return pairs


def join(left: Table, right: Table, spec: str, how: str) -> tuple[list[str], list[dict[str, Any]]]:
    pairs = parse_keys(spec)
    for lk, rk in pairs:
        _require(left, lk, "a --on key")
        _require(right, rk, "a --on key")
    right_keys = {rk for _, rk in pairs}
    renamed: dict[str, str] = {}
    taken = set(left.columns)
    for name in right.columns:
        if name in right_keys:
            continue
        new = name
        while new in taken:
            new += "_right"
        renamed[name] = new
        taken.add(new)
    index: dict[tuple[str, ...], list[dict[str, Any]]] = {}
    for row in right.rows:
        key = tuple(key_text(row.get(rk)) for _, rk in pairs)
        if None not in key:
            index.setdefault(key, []).append(row)  # type: ignore[arg-type]
    out = []
    for row in left.rows:
        key = tuple(key_text(row.get(lk)) for lk, _ in pairs)
        matches = index.get(key, []) if None not in key else []  # type: ignore[arg-type]
        for match in matches or ([None] if how == "left" else []):
            joined = dict(row)
            for name, new in renamed.items():
                joined[new] = match.get(name) if match is not None else None
            out.append(joined)
    return [*left.columns, *renamed.values()], out


# --- aggregate --------------------------------------------------------------------------------


def parse_agg(spec: str, table: Table) -> tuple[str, str, str]:
    func, _, column = spec.partition(":")
    if func not in AGG_FUNCS or not column:
        raise TableError(
            f"--agg {spec!r} is not FUNC:COLUMN with FUNC one of {', '.join(AGG_FUNCS)} "
            "(count:* counts rows)"
        )
    if column == "*":
        if func != "count":
            raise TableError(f"--agg {spec!r}: only count takes '*'; name a column")
        return func, column, "count"
    _require(table, column, f"named in --agg {spec!r}")
    return func, column, f"{func}_{column}"


def _numbers(table: Table, idx: list[int], column: str, spec: str) -> list[int | float]:
    found = []
    for i in idx:
        value = table.rows[i].get(column)
        if value is None:
            continue
        number = as_number(value)
        if number is None:
            raise TableError(
                f"{table.locate(i)}, column {column!r}: {cell_text(value)!r} is not a number, "
                f"so --agg {spec} cannot add it up; fix the cell or filter the row out first"
            )
        found.append(number)
    return found


def _aggregate_one(table: Table, idx: list[int], func: str, column: str, spec: str) -> Any:
    if func == "count":
        return (
            len(idx) if column == "*" else sum(table.rows[i].get(column) is not None for i in idx)
        )
    if func == "distinct":
        return len({key_text(table.rows[i].get(column)) for i in idx} - {None})
    if func in ("sum", "mean"):
        numbers = _numbers(table, idx, column, spec)
        if all(isinstance(n, int) for n in numbers) and func == "sum":
            return sum(numbers)
        if func == "sum":
            return math.fsum(numbers)
        return math.fsum(numbers) / len(numbers) if numbers else None
    values = [table.rows[i].get(column) for i in idx if table.rows[i].get(column) is not None]
    if not values:
        return None
    pick = min if func == "min" else max
    if all(as_number(v) is not None for v in values):
        return pick(values, key=lambda v: as_number(v))
    return pick(values, key=cell_text)


def _sort_key(values: tuple[Any, ...]) -> tuple[tuple[Any, ...], ...]:
    key = []
    for value in values:
        number = as_number(value)
        if value is None:
            key.append((0, 0, ""))
        elif number is not None:
            key.append((1, number, ""))
        else:
            key.append((2, 0, cell_text(value)))
    return tuple(key)


def aggregate(
    table: Table, group_by: list[str], specs: list[str]
) -> tuple[list[str], list[dict[str, Any]]]:
    for column in group_by:
        _require(table, column, "named in --group-by")
    aggs = [(*parse_agg(s, table), s) for s in specs]
    names = [*group_by, *(name for _, _, name, _ in aggs)]
    clash = sorted({n for n in names if names.count(n) > 1})
    if clash:
        raise TableError(f"output columns {clash} would repeat; aggregate each column once")
    groups: dict[tuple[str | None, ...], list[int]] = {}
    first: dict[tuple[str | None, ...], tuple[Any, ...]] = {}
    for i, row in enumerate(table.rows):
        key = tuple(key_text(row.get(c)) for c in group_by)
        groups.setdefault(key, []).append(i)
        first.setdefault(key, tuple(row.get(c) for c in group_by))
    if not group_by and not groups:
        groups[()] = []
        first[()] = ()
    out = []
    for key in sorted(groups, key=lambda k: _sort_key(first[k])):
        result = dict(zip(group_by, first[key], strict=True))
        for func, column, name, spec in aggs:
            result[name] = _aggregate_one(table, groups[key], func, column, spec)
        out.append(result)
    return names, out


# --- command line -----------------------------------------------------------------------------


def _split(values: list[str] | None) -> list[str]:
    return [part.strip() for v in values or [] for part in v.split(",") if part.strip()]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="table.py", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    fmt = {"metavar": "FORMAT", "help": "csv, tsv, json (rows) or jsonl; default: by extension"}
    strings = {"action": "store_true", "help": "keep every CSV/TSV cell as text"}
    p = sub.add_parser("profile", help="column types, nulls, distinct counts, min/max")
    p.add_argument("input")
    p.add_argument("--from", dest="from_", **fmt)
    p.add_argument("--out", help="write the profile JSON here (default: stdout)")
    for name, text in (("filter", "keep rows matching every --where"), ("convert", "reformat")):
        p = sub.add_parser(name, help=text)
        p.add_argument("input")
        p.add_argument("--from", dest="from_", **fmt)
        if name == "filter":
            p.add_argument("--where", action="append", required=True, metavar="'COL OP VALUE'")
    p = sub.add_parser("join", help="join two tables on key columns")
    p.add_argument("--left", required=True)
    p.add_argument("--right", required=True)
    p.add_argument("--on", required=True, metavar="KEY[,KEY]|LEFT=RIGHT")
    p.add_argument("--how", choices=("inner", "left"), default="inner")
    p.add_argument("--from", dest="from_", **fmt)
    p = sub.add_parser("aggregate", help="group rows and summarise columns")
    p.add_argument("input")
    p.add_argument("--from", dest="from_", **fmt)
    p.add_argument("--group-by", nargs="+", metavar="COL")
    p.add_argument("--agg", nargs="+", required=True, metavar="FUNC:COL")
    for name in ("filter", "convert", "join", "aggregate"):
        p = sub.choices[name]
        p.add_argument("--out", required=True, help="the file to write")
        p.add_argument("--to", **fmt)
        p.add_argument("--strings", **strings)
    sub.choices["profile"].add_argument("--strings", **strings)
    return parser


def run(args: argparse.Namespace) -> dict[str, Any]:
    if args.command == "join":
        left = read_table(args.left, args.from_, strings=args.strings)
        right = read_table(args.right, args.from_, strings=args.strings)
        columns, rows = join(left, right, args.on, args.how)
        kind = write_table(columns, rows, args.out, args.to, [args.left, args.right])
        return {
            "command": "join",
            "left": args.left,
            "right": args.right,
            "how": args.how,
            "rows_left": len(left.rows),
            "rows_right": len(right.rows),
            "rows_out": len(rows),
            "columns": columns,
            "out": args.out,
            "format": kind,
        }
    table = read_table(args.input, args.from_, strings=args.strings)
    if args.command == "profile":
        return profile(table)
    if args.command == "filter":
        columns, rows = table.columns, filter_rows(table, args.where)
    elif args.command == "aggregate":
        columns, rows = aggregate(table, _split(args.group_by), args.agg)
    else:
        columns, rows = table.columns, table.rows
    kind = write_table(columns, rows, args.out, args.to, [args.input])
    return {
        "command": args.command,
        "input": args.input,
        "rows_in": len(table.rows),
        "rows_out": len(rows),
        "columns": columns,
        "out": args.out,
        "format": kind,
    }


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        result = run(args)
        if args.command == "profile" and args.out:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
            result = {
                "command": "profile",
                "input": args.input,
                "out": args.out,
                "rows": result["rows"],
                "columns": len(result["columns"]),
            }
    except TableError as exc:
        print(f"table.py {args.command}: error: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(
            f"table.py {args.command}: error: cannot write {exc.filename}: {exc.strerror}; "
            "write under /workspace/output or /workspace/work",
            file=sys.stderr,
        )
        return 1
    print(json.dumps(result, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
