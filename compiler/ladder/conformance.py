"""L4 contract conformance: strip what the contract does not allow, then validate.

Scalars whose JSON type is wrong but whose value converts without loss are converted first
("100.00" → 100.0 where a number is expected, "7" → 7 for an integer, "true" → true for a
boolean, 42 → "42" for a string); anything lossy or ambiguous is left for validation to report.
A key is stripped where the schema forbids it (`additionalProperties: false` with no
matching `patternProperties`, or `unevaluatedProperties: false` where the view can tell
which keys are evaluated) or, with `strip_undeclared`, wherever it is not declared.
What remains is validated by jsonschema (formats checked); every violation is an error.
"""

import re
from typing import Any

from jsonschema import ValidationError

from compiler.ladder.pointer import Path, encode
from compiler.ladder.schemaview import SchemaNode, walk
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L4"
_MAX_MESSAGE = 300


def strip(payload: Any, ctx: StageContext, report: StageReport) -> None:
    """Remove the keys the contract does not allow, recording each as a correction."""
    strict = ctx.contract.strip_undeclared

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        if not isinstance(container, dict):
            return
        shape = ctx.view.shape(node)
        closed = "additionalProperties" if shape.additional is False else "unevaluatedProperties"
        for key in [k for k in container if not ctx.view.allows_key(node, k)]:
            value = container.pop(key)
            report.correct(
                (*path, key),
                "remove",
                value,
                None,
                f"the contract does not allow it ({closed}: false)",
            )
        if strict:
            for key in [
                k for k in container if ctx.view.child(node, k, declared_only=True) is None
            ]:
                value = container.pop(key)
                report.correct(
                    (*path, key),
                    "remove",
                    value,
                    None,
                    "not declared by the contract (strip_undeclared)",
                )

    walk(payload, ctx.view, visit)


_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})(?:\.[0-9]{1,17})?")
_INTEGER = re.compile(r"-?(?:0|[1-9][0-9]{0,17})")
_NO = object()


def lossless(value: Any, types: frozenset[str]) -> Any:
    """`value` converted to one of the JSON `types` without losing anything, or _NO."""
    if not types or isinstance(value, (dict, list)) or value is None:
        return _NO
    if isinstance(value, bool):
        if "boolean" in types or types != {"string"}:
            return _NO
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        if "number" in types or ("integer" in types and isinstance(value, int)):
            return _NO
        if "integer" in types and float(value).is_integer() and abs(value) < 2**53:
            return int(value)
        return str(value) if types == {"string"} and isinstance(value, int) else _NO
    if not isinstance(value, str) or "string" in types:
        return _NO
    text = value.strip()
    if "integer" in types and _INTEGER.fullmatch(text):
        return int(text)
    if "number" in types and _NUMBER.fullmatch(text):
        return int(text) if _INTEGER.fullmatch(text) else float(text)
    if "boolean" in types and text in ("true", "false"):
        return text == "true"
    return _NO


def coerce(payload: Any, ctx: StageContext, report: StageReport) -> None:
    """Convert mistyped scalars the contract declares, losslessly, recording each."""

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        if isinstance(container, dict):
            members: list[tuple[Any, SchemaNode | None]] = [
                (k, ctx.view.child(node, k)) for k in container
            ]
        elif isinstance(container, list):
            members = [(i, ctx.view.item(node, i)) for i in range(len(container))]
        else:
            return
        for key, sub in members:
            if sub is None:
                continue
            types = ctx.view.shape(sub).types
            new = lossless(container[key], types)
            if new is not _NO:
                old = container[key]
                container[key] = new
                want = " or ".join(sorted(types))
                report.correct(
                    (*path, key), "replace", old, new, f"{type(old).__name__} converted to {want}"
                )

    walk(payload, ctx.view, visit)


def violations(payload: Any, ctx: StageContext) -> list[tuple[str, str]]:
    """Every schema violation as (pointer, message), in document order; [] when valid."""
    errors: list[ValidationError] = []
    found = []
    try:
        errors += ctx.contract.validator.iter_errors(payload)
    except RecursionError:
        return [("", "the payload nests too deep for the schema to be checked")]
    except ArithmeticError as exc:  # multipleOf on a float near the limit of float range
        found.append(("", f"a number is too large for the schema to be checked ({exc})"))
    for error in errors:
        message = _message(error)
        found.append((encode(tuple(error.absolute_path)), message))
    return sorted(found)


def _message(error: ValidationError) -> str:
    text = error.message
    if len(text) > _MAX_MESSAGE:
        text = text[: _MAX_MESSAGE - 1] + "…"
    return f"{text} (schema keyword {error.validator!r})"


def conformance(payload: Any, *, ctx: StageContext) -> StageReport:
    """Strip disallowed keys, then report every remaining violation as an error."""
    report = StageReport(STAGE, payload)
    strip(payload, ctx, report)
    coerce(payload, ctx, report)
    for pointer, message in violations(payload, ctx):
        report.find(pointer, "error", message)
    return report
