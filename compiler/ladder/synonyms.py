"""L0b synonym rename: fields renamed to their canonical names by the contract's synonym map.

Applies at every object whose schema declares the canonical name, and also catches case
and separator variants of a canonical or alias name ("CustomerID", "customer-id"). A field
is never renamed onto a key that is already present; that conflict is a warning.
"""

import re
from typing import Any

from compiler.ladder.pointer import Path, encode
from compiler.ladder.schemaview import SchemaNode, walk
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L0b"
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_SEPARATORS = re.compile(r"[^a-z0-9]+")


def normalize_name(name: str) -> str:
    """Fold case and separators: "CustomerID", "customer-id" and "Customer Id" agree."""
    return _SEPARATORS.sub("_", _CAMEL.sub("_", name).lower()).strip("_")


def _index(ctx: StageContext, node: SchemaNode) -> dict[str, tuple[str, str]]:
    """Normalized name -> (canonical, why) for the properties this position declares."""
    declared = ctx.view.shape(node).properties
    index: dict[str, tuple[str, str]] = {}
    for alias, canonical in sorted(ctx.contract.synonyms.items()):
        if canonical in declared:
            index.setdefault(alias, (canonical, f"synonym: {alias!r} means {canonical!r}"))
            why = f"synonym: {alias!r} (as spelled here) means {canonical!r}"
            index.setdefault(normalize_name(alias), (canonical, why))
    for canonical in declared:
        index.setdefault(
            normalize_name(canonical), (canonical, f"case/separator variant of {canonical!r}")
        )
    return index


def synonyms(payload: Any, *, ctx: StageContext) -> StageReport:
    """Rename aliases to canonical names throughout the payload."""
    report = StageReport(STAGE, payload)

    def visit(path: Path, container: Any, node: SchemaNode) -> None:
        if not isinstance(container, dict):
            return
        index = ctx.view.memo(("synonyms", id(node)), lambda: _index(ctx, node))
        if not index:
            return
        renames: dict[str, str] = {}
        for key in container:
            if ctx.view.child(node, key, declared_only=True) is not None:
                continue
            hit = index.get(key) or index.get(normalize_name(key))
            if hit is None:
                continue
            canonical, why = hit
            if canonical in container or canonical in renames.values():
                report.find(
                    (*path, key),
                    "warning",
                    f"{key!r} means {canonical!r}, which is already present; left unchanged",
                )
                continue
            renames[key] = canonical
            report.correct(
                (*path, canonical), "move", encode((*path, key)), encode((*path, canonical)), why
            )
        if renames:
            items = [(renames.get(k, k), v) for k, v in container.items()]
            container.clear()
            container.update(items)

    walk(payload, ctx.view, visit)
    return report
