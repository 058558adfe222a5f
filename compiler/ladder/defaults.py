"""L0d default injection: missing fields get their configured defaults.

Contract defaults (keyed by pointer, "*" for every array element) come first, then the
schema's own `default` keywords where `use_schema_defaults` is on. A default is only added
to an object that exists, at a property the schema declares: parents are never created
and arrays never grow.
"""

import copy
from typing import Any

from compiler.ladder.pointer import Path, decode
from compiler.ladder.schemaview import SchemaNode, iter_paths, walk
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L0d"


def _declared(ctx: StageContext, node: SchemaNode) -> list[tuple[str, Any]]:
    """(property, default) for the declared properties of a position that have a default."""
    out = []
    for key, sub in ctx.view.shape(node).properties.items():
        found = ctx.view.shape(sub).default
        if found:
            out.append((key, found[0]))
    return out


def defaults(payload: Any, *, ctx: StageContext) -> StageReport:
    """Inject contract and schema defaults for missing properties."""
    report = StageReport(STAGE, payload)
    for pointer, value in ctx.contract.defaults.items():
        for parent_path, parent, key in iter_paths(payload, decode(pointer)):
            if isinstance(parent, dict) and key not in parent:
                parent[key] = copy.deepcopy(value)
                report.correct((*parent_path, key), "add", None, value, "default from the contract")
    if not ctx.contract.use_schema_defaults:
        return report

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        if not isinstance(container, dict):
            return
        for key, value in ctx.view.memo(("defaults", id(node)), lambda: _declared(ctx, node)):
            if key not in container:
                container[key] = copy.deepcopy(value)
                report.correct((*path, key), "add", None, value, "default from the schema")

    walk(payload, ctx.view, visit)
    return report
