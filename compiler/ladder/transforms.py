"""L0e business transforms: declarative, deterministic value rewrites from the contract.

Title/upper/lower case, unit scaling, enum case folding and date normalization, each at a
path the schema defines. A value a transform cannot handle is left as it is, with a
warning; an ambiguous date (03/04/2024 when both MM/DD and DD/MM are accepted) is never
guessed. A string the guard redacted is never transformed, and a scaled number that would
not be finite is left alone with a warning.
"""

import math
import re
from typing import Any

from compiler.ladder.contract import (
    CaseTransform,
    DateTransform,
    EnumCaseTransform,
    ScaleTransform,
    Transform,
)
from compiler.ladder.dates import is_iso_date, parse_date
from compiler.ladder.detectors import REDACTED
from compiler.ladder.pointer import Path, decode
from compiler.ladder.schemaview import iter_paths
from compiler.ladder.stage import StageContext, StageReport
from compiler.ladder.synonyms import normalize_name

STAGE = "L0e"
_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_QUANTITY = re.compile(r"\s*([-+]?\d+(?:\.\d+)?)\s*([^\d\s.+-][^\s]{0,15})\s*")

Outcome = tuple[Any, str] | str | None  # (new value, why) | a warning | nothing to do


def title_case(text: str) -> str:
    """Title-case words written all in one case; mixed-case words (McDonald) are kept."""

    def fix(match: re.Match[str]) -> str:
        word = match.group(0)
        if not (word.islower() or word.isupper()):
            return word
        head, _, tail = word.partition("'")
        fixed = head[:1].upper() + head[1:].lower()
        return fixed + ("'" + tail[:1].upper() + tail[1:].lower() if tail else "")

    return _WORD.sub(fix, text)


def _case(t: CaseTransform, value: Any) -> Outcome:
    if not isinstance(value, str):
        return f"{t.style} case applies to strings, not {type(value).__name__}"
    new = {"title": title_case, "upper": str.upper, "lower": str.lower}[t.style](value)
    return (new, f"{t.style} case") if new != value else None


def _number(x: float, t: ScaleTransform, integer_only: bool) -> float | int:
    x = round(x, 10 if t.round_digits is None else t.round_digits)
    return int(x) if integer_only and x.is_integer() else x


def _scaled(x: float, t: ScaleTransform, integer_only: bool, why: str) -> Outcome:
    if not math.isfinite(x):
        return f"scaling gives a number too large to represent ({why}); left unchanged"
    return _number(x, t, integer_only), why


def _scale(t: ScaleTransform, value: Any, integer_only: bool) -> Outcome:
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if t.factor == 1:
            return None
        return _scaled(value * t.factor, t, integer_only, f"scaled by {t.factor:g}")
    if isinstance(value, str):
        match = _QUANTITY.fullmatch(value)
        unit = match.group(2) if match else None
        if match and unit is not None and (unit in t.units or unit.lower() in t.units):
            multiplier = t.units.get(unit, t.units.get(unit.lower(), 1.0))
            why = f"{value!r} converted with {unit!r} = x{multiplier:g}"
            return _scaled(float(match.group(1)) * multiplier, t, integer_only, why)
        return f"{value!r} has no unit this transform knows ({', '.join(sorted(t.units)) or '-'})"
    return f"unit scaling applies to numbers, not {type(value).__name__}"


def _enum(members: tuple[Any, ...] | None, value: Any) -> Outcome:
    if not isinstance(value, str) or members is None or value in members:
        return None
    names = [m for m in members if isinstance(m, str)]
    hits = [m for m in names if m.casefold() == value.strip().casefold()]
    if not hits:
        hits = [m for m in names if normalize_name(m) == normalize_name(value)]
    if len(hits) == 1:
        return hits[0], f"case-folded onto enum member {hits[0]!r}"
    if hits:
        return f"{value!r} matches several enum members {hits}; left unchanged"
    return None


def _date(t: DateTransform, value: Any) -> Outcome:
    if not isinstance(value, str) or is_iso_date(value):
        return None
    meanings = parse_date(value, t.input_formats)
    if len(meanings) == 1:
        (iso,) = meanings
        return iso, f"date {value!r} normalized to ISO 8601"
    if meanings:
        return f"date {value!r} is ambiguous ({' or '.join(sorted(meanings))}); left unchanged"
    return f"{value!r} is not a date in any accepted format ({', '.join(t.input_formats)})"


def _apply(t: Transform, value: Any, ctx: StageContext, tokens: tuple[str, ...]) -> Outcome:
    if isinstance(t, CaseTransform):
        return _case(t, value)
    if isinstance(t, ScaleTransform):
        node = ctx.view.locate(tokens)
        types = ctx.view.shape(node).types if node is not None else frozenset()
        return _scale(t, value, "integer" in types and "number" not in types)
    if isinstance(t, EnumCaseTransform):
        node = ctx.view.locate(tokens)
        return _enum(ctx.view.shape(node).enum if node is not None else None, value)
    return _date(t, value)


def transforms(payload: Any, *, ctx: StageContext) -> StageReport:
    """Apply every configured transform, in contract order, wherever its path matches."""
    report = StageReport(STAGE, payload)
    for transform in ctx.contract.transforms:
        tokens = decode(transform.path)
        for parent_path, parent, key in iter_paths(report.payload, tokens):
            where: Path
            if isinstance(parent, dict):
                if key not in parent:
                    continue
                value, where = parent[key], (*parent_path, key)
            else:
                if not key.isdigit() or int(key) >= len(parent):
                    continue
                value, where = parent[int(key)], (*parent_path, int(key))
            if value is None:
                continue
            if isinstance(value, str) and REDACTED in value:
                # the guard redacted part of it: rewriting it would garble the placeholder
                report.find(where, "info", f"{transform.kind} transform skipped: redacted value")
                continue
            outcome = _apply(transform, value, ctx, tokens)
            if isinstance(outcome, str):
                report.find(where, "warning", outcome)
            elif outcome is not None:
                parent[where[-1]] = outcome[0]
                report.correct(where, "replace", value, outcome[0], outcome[1])
    return report
