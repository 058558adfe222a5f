"""L0c structural fix: formatting mistakes in a payload's shape, never its values.

Three fixes, each only where the schema fixes the expected type: JSON text in a string
where an object or array is required is parsed; a needless wrapper (`{"rows": [...]}` where
an array is required, `{"data": {...}}` whose inner keys are the declared ones, `[{...}]`
where one object is required) is unwrapped; one object where an array of objects is
required becomes a one-element array. Anything else is left for L4 to report.
"""

from typing import Any

from compiler.jsontypes import json_type
from compiler.ladder.contract import LadderLimits
from compiler.ladder.intake import parse_json_text
from compiler.ladder.pointer import Path
from compiler.ladder.schemaview import SchemaNode, SchemaView, type_allows, walk
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L0c"


def _object_wrapper(
    value: dict[str, Any], node: SchemaNode, view: SchemaView
) -> tuple[Any, str] | None:
    """`{"data": {...declared fields...}}` where the declared fields belong one level up.

    Only when the wrapper key is not declared, the inner object carries declared fields,
    and the wrapper is not a legitimate shape: its key is not allowed, or the required
    fields are missing at this level.
    """
    ((key, inner),) = value.items()
    shape = view.shape(node)
    if not isinstance(inner, dict) or view.child(node, key, declared_only=True) is not None:
        return None
    if not shape.properties.keys() & inner.keys():
        return None
    if view.allows_key(node, key) and not shape.required:
        return None
    return inner, f"needless wrapper object {{{key!r}: {{...}}}} unwrapped"


def repair(
    value: Any, node: SchemaNode, view: SchemaView, limits: LadderLimits, depth: int = 0
) -> tuple[Any, str] | None:
    """The structural fix for one value at a schema position: (new value, why), or None."""
    types = view.shape(node).types
    if isinstance(value, dict) and len(value) == 1 and (not types or "object" in types):
        return _object_wrapper(value, node, view)
    if not types or type_allows(types, value):
        return None
    if isinstance(value, str) and types & {"object", "array"}:
        parsed = parse_json_text(value, limits, depth)
        if parsed is not None and type_allows(types, parsed):
            return parsed, f"JSON text parsed into the {json_type(parsed)} the schema requires"
        return None
    if isinstance(value, dict) and "array" in types:
        if len(value) == 1:
            ((key, inner),) = value.items()
            if isinstance(inner, list):
                return inner, f"needless wrapper object {{{key!r}: [...]}} unwrapped"
        item = view.shape(node).items
        item_types = view.shape(item).types if isinstance(item, dict) else frozenset()
        if type_allows(item_types, value):
            return [value], "one object where an array is required: wrapped in a 1-item array"
        return None
    if isinstance(value, list) and "object" in types and len(value) == 1:
        if isinstance(value[0], dict):
            return value[0], "one-item array where one object is required: unwrapped"
    return None


def structural(payload: Any, *, ctx: StageContext) -> StageReport:
    """Apply L0c to the payload and to every member the schema describes."""
    report = StageReport(STAGE, payload)
    view, limits = ctx.view, ctx.contract.limits
    fixed = repair(payload, view.root, view, limits)
    if fixed is not None:
        report.correct((), "replace", payload, fixed[0], fixed[1])
        report.payload = fixed[0]

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        members = container.items() if isinstance(container, dict) else enumerate(container)
        for key, member in list(members):
            sub = view.child(node, key) if isinstance(key, str) else view.item(node, key)
            if sub is None:
                continue
            change = repair(member, sub, view, limits, len(path) + 1)
            if change is not None:
                container[key] = change[0]
                report.correct((*path, key), "replace", member, change[0], change[1])

    walk(report.payload, view, visit)
    return report
