"""L4 contract conformance: strip what the contract does not allow, then validate.

A key is stripped where the schema forbids it (`additionalProperties: false` with no
matching `patternProperties`, or `unevaluatedProperties: false` where the view can tell
which keys are evaluated) or, with `strip_undeclared`, wherever it is not declared.
What remains is validated by jsonschema (formats checked); every violation is an error.
"""

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
    for pointer, message in violations(payload, ctx):
        report.find(pointer, "error", message)
    return report
