"""L0 schema: parsed (see `intake`), the expected top-level type, required properties.

L0 is a syntax check, not the final word: a problem a later selected stage is there to fix
(a wrapper L0c unwraps, a required field L0b renames into place or L0d fills) is reported
as info or a warning, and a missing required property is only a warning when L4 will
enforce the final payload. What nothing later can fix is an error (in block mode it stops
the run). Required properties are checked on the top-level object, or on each object of a
top-level array; deeper levels are L4's.
"""

from collections.abc import Iterator
from typing import Any

from compiler.jsontypes import json_type
from compiler.ladder.pointer import Path, decode, matches
from compiler.ladder.schemaview import SchemaNode, type_allows
from compiler.ladder.stage import StageContext, StageReport
from compiler.ladder.structural import repair
from compiler.ladder.synonyms import normalize_name

STAGE = "L0"


def _objects(payload: Any, ctx: StageContext) -> Iterator[tuple[Path, dict[str, Any], SchemaNode]]:
    if isinstance(payload, dict):
        yield (), payload, ctx.view.root
    elif isinstance(payload, list):
        for index, item in enumerate(payload):
            node = ctx.view.item(ctx.view.root, index)
            if isinstance(item, dict) and node is not None:
                yield (index,), item, node


def _has_default(ctx: StageContext, path: Path, sub: SchemaNode | None) -> bool:
    if any(matches(decode(p), path) for p in ctx.contract.defaults):
        return True
    return (
        ctx.contract.use_schema_defaults and sub is not None and bool(ctx.view.shape(sub).default)
    )


def _supplier_names(ctx: StageContext, prop: str) -> frozenset[str]:
    """The normalized names L0b renames onto `prop` (derived from the contract, memoised)."""

    def build() -> frozenset[str]:
        names = {normalize_name(a) for a, c in ctx.contract.synonyms.items() if c == prop}
        return frozenset({*names, normalize_name(prop)})

    found: frozenset[str] = ctx.view.memo(("supplier-names", prop), build)
    return found


def _suppliers(present: set[str], path: Path, sub: SchemaNode | None, ctx: StageContext) -> str:
    """Which later stages will put a missing required property in place ("" for none).

    `present` is the normalized names of the object's undeclared keys.
    """
    prop = str(path[-1])
    found = []
    if "L0b" in ctx.later and _supplier_names(ctx, prop) & present:
        found.append("L0b")
    if "L0d" in ctx.later and _has_default(ctx, path, sub):
        found.append("L0d")
    return "/".join(found)


def _check_required(payload: Any, ctx: StageContext, report: StageReport) -> None:
    for path, obj, node in _objects(payload, ctx):
        shape = ctx.view.shape(node)
        missing = [prop for prop in shape.required if prop not in obj]
        if not missing:
            continue
        present = (  # L0b only renames keys the schema does not declare
            {normalize_name(k) for k in obj if ctx.view.child(node, k, declared_only=True) is None}
            if "L0b" in ctx.later
            else set()
        )
        for prop in missing:
            where = (*path, prop)
            suppliers = _suppliers(present, where, shape.properties.get(prop), ctx)
            if suppliers:
                message = f"required property {prop!r} is missing; {suppliers} will supply it"
                report.find(where, "info", message)
            elif "L4" in ctx.later:
                message = f"required property {prop!r} is missing (L4 decides after the repairs)"
                report.find(where, "warning", message)
            else:
                report.find(where, "error", f"required property {prop!r} is missing")


def schema(payload: Any, *, ctx: StageContext) -> StageReport:
    """Check the top-level type and the required properties of a parsed payload."""
    report = StageReport(STAGE, payload)
    expected = ctx.contract.expected_type()
    if expected is not None and not type_allows(frozenset([expected]), payload):
        got = json_type(payload)
        fix = repair(payload, ctx.view.root, ctx.view, ctx.contract.limits)
        if fix is not None and "L0c" in ctx.later:
            message = f"expected a top-level {expected}, got {got}; L0c will repair it ({fix[1]})"
            report.find("", "warning", message)
        else:
            report.find("", "error", f"expected a top-level {expected}, got {got}")
        return report
    _check_required(payload, ctx, report)
    return report
