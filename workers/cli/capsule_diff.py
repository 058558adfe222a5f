"""`forge capsule diff NAME@A NAME@B`: a CapsuleDiff (compiler/capsule/diff.py) for people."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

if TYPE_CHECKING:
    from schemas.base import PlainData
    from schemas.capsule import CapsuleDiff, StepChange, ValueChange

__all__ = ["render_diff"]

_STEP_STYLES = {"added": "green", "removed": "red", "changed": "yellow", "unchanged": "dim"}


def render_diff(diff: CapsuleDiff, console: Console) -> None:
    """Header, steps, parameter and governance changes, then the code diffs as plain text."""
    if diff.identical:
        console.print(
            f"{escape(diff.ref_a)} and {escape(diff.ref_b)} are identical "
            f"(same capsule hash {_short(diff.capsule_hash_a)})"
        )
        return
    console.print(
        f"[bold]{escape(diff.ref_a)} -> {escape(diff.ref_b)}[/]  "
        f"[dim]capsule {_short(diff.capsule_hash_a)} -> {_short(diff.capsule_hash_b)}[/]"
    )
    if diff.plan_hash is not None:
        old, new = (_short(str(v)) for v in (diff.plan_hash.old, diff.plan_hash.new))
        console.print(f"plan hash: {old} -> {new}")
    if diff.goal_template is not None:
        console.print(f"goal template: {escape(_pair(diff.goal_template))}")
    if diff.steps:
        console.print(_steps_table(diff.steps))
    params = _parameter_rows(diff)
    if params:
        console.print(_table("parameter changes", ("parameter", "change", "detail"), params))
    policy = [("governance", c) for c in diff.governance]
    policy += [("isolation_policy", c) for c in diff.isolation_policy]
    if policy:
        keys = [(f"{area}.{c.path}", str(c.change), _pair(c)) for area, c in policy]
        console.print(_table("governance changes", ("key", "change", "old -> new"), keys))
    for step in diff.steps:
        if step.code_diff:
            console.print(f"[bold]code of {escape(step.step_key)}[/]")
            # Programs are shown as they are: never read as markup, emoji codes or highlights.
            console.print(Text(step.code_diff.rstrip("\n")), soft_wrap=True)
    unchanged = all(s.change == "unchanged" for s in diff.steps)
    if unchanged and not (params or policy or diff.plan_hash or diff.goal_template):
        # The hash covers the provenance (source run, receipts) and each cell's exit and check.
        console.print(
            "[dim]no step, parameter, policy or plan differs: the provenance or the cells' "
            "exit codes do[/]"
        )


def _steps_table(steps: list[StepChange]) -> Table:
    table = Table(title="steps", title_justify="left")
    for name in ("step", "change", "contract hash", "detail"):
        table.add_column(name, overflow="fold")
    for s in steps:
        contract = _short(s.contract_a or s.contract_b)
        if s.change == "changed" and s.contract_a != s.contract_b:
            contract = f"{_short(s.contract_a)} -> {_short(s.contract_b)}"
        style = _STEP_STYLES[s.change]
        table.add_row(
            escape(s.step_key), f"[{style}]{s.change}[/]", contract, escape(_step_detail(s))
        )
    return table


def _step_detail(s: StepChange) -> str:
    if s.change != "changed":
        return ""
    parts = [f"{c.path}: {_pair(c)}" for c in s.fields]
    if s.cells_a != s.cells_b:
        parts.append(f"cells: {s.cells_a} -> {s.cells_b}")
    if s.code_diff:
        parts.append("code changed")
    return "\n".join(parts)


def _parameter_rows(diff: CapsuleDiff) -> list[tuple[str, str, str]]:
    """One row per input, scalar or schema pointer; each changed detail on its own line."""
    rows: list[tuple[str, str, str]] = []
    for i in diff.inputs:
        details = [f"column {c.path}: {_pair(c)}" for c in i.columns]
        details += [f"{c.path}: {_pair(c)}" for c in i.fields]
        rows.append((f"input {i.name}", i.change, "\n".join(details)))
    for sc in diff.scalars:
        details = [f"{c.path}: {_pair(c)}" for c in sc.fields]
        rows.append((f"scalar {sc.name}", sc.change, "\n".join(details)))
    for c in diff.parameter_schema:
        rows.append((f"schema {c.path}", c.change, _pair(c)))
    return rows


def _table(title: str, columns: tuple[str, ...], rows: list[tuple[str, str, str]]) -> Table:
    table = Table(title=title, title_justify="left")
    for name in columns:
        table.add_column(name, overflow="fold")
    for first, change, detail in rows:
        style = _STEP_STYLES[change]
        table.add_row(escape(first), f"[{style}]{change}[/]", escape(detail))
    return table


def _pair(c: ValueChange) -> str:
    """`old -> new`; `+ new` when added, `- old` when removed."""
    if c.change == "added":
        return f"+ {_json(c.new)}"
    if c.change == "removed":
        return f"- {_json(c.old)}"
    return f"{_json(c.old)} -> {_json(c.new)}"


def _json(value: PlainData) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _short(digest: str | None) -> str:
    """12 hex digits of a `sha256:<hex>` (or bare hex) digest; `-` when there is none."""
    return digest.split(":", 1)[-1][:12] if digest else "-"
