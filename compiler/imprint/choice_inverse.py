"""`{ONE_OF}` back to one payload value: the kept alternative, the discriminator, or best fit."""

from typing import TYPE_CHECKING, Any

from compiler.imprint.checks import check_leaf
from compiler.imprint.errors import TemplateError
from compiler.imprint.nodes import Arr, Leaf, Node, Obj, OneOf, Tup
from compiler.imprint.template import render
from compiler.imprint.tokens import ONE_OF, looks_like_token
from compiler.imprint.unfilled import OMIT, untouched
from compiler.jsontypes import json_type

if TYPE_CHECKING:  # payload imports this module; the converter is only passed in
    from compiler.imprint.payload import Inverse


def choose(inv: "Inverse", node: OneOf, value: Any, path: str, depth: int, required: bool) -> Any:
    """Convert a value filled for a `{ONE_OF}` position.

    The model may replace the whole `{"{ONE_OF}": [...]}` object by one filled alternative
    (the documented form), or keep the wrapper and fill exactly one of its entries.
    """
    if isinstance(value, dict) and ONE_OF in value:
        return _wrapped(inv, node, value, path, depth, required)
    if looks_like_token(value):
        # Left as it was: an alternative that is itself a token (an AUTO constant, say)
        # resolves as that token does; anything else is an unfilled choice.
        for alt in node.alts:
            if isinstance(alt, Leaf) and str(alt.token) == value:
                return inv.convert(alt, value, path, depth, required)
        return inv.unfilled(required, path, value, "a choice")
    index = _discriminated(node, value)
    if index is not None:
        return inv.convert(node.alts[index], value, path, depth, required)
    results: list[tuple[tuple[int, int, int], Any]] = []
    errors: list[TemplateError] = []
    candidates = [alt for alt in node.alts if _could_fit(inv, alt, value)] or list(node.alts)
    for alt in candidates:
        converted, err = _attempt(inv, alt, value, path, depth, required)
        if err is not None:
            errors.append(err)
            continue
        results.append((_fit(alt, value), converted))
    if results:
        best = max(results, key=lambda r: r[0])  # max keeps the first of equal scores
        return best[1]
    closest = max(errors, key=lambda e: len(e.path))
    raise TemplateError(
        "one_of",
        path,
        f"the value fits none of the {len(node.alts)} alternatives; "
        f"closest: {closest.path}: {closest.problem}",
        f"fill exactly one alternative of the {ONE_OF} list as it is written ({closest.hint})",
    )


def _attempt(
    inv: "Inverse", alt: Node, value: Any, path: str, depth: int, required: bool
) -> tuple[Any, TemplateError | None]:
    """Convert under one alternative, once per (alternative, value, path): (result, error)."""
    key = (id(alt), id(value), path, required)
    seen = inv.tried.get(key)
    if seen is not None and seen[0] is value:
        return seen[1], seen[2]
    try:
        converted, error = inv.convert(alt, value, path, depth, required), None
    except TemplateError as err:
        if err.reason == "limit":
            raise  # too deep or too much work: every other alternative would hit it too
        converted, error = None, err
    inv.tried[key] = (value, converted, error)
    return converted, error


def _could_fit(inv: "Inverse", alt: Node, value: Any) -> bool:
    """A cheap look at the shape: False when `alt` surely refuses `value`."""
    if isinstance(alt, Arr | Tup):
        return isinstance(value, list) or (value is None and alt.nullable)
    if not isinstance(alt, Obj):
        return True
    if not isinstance(value, dict):
        return value is None and alt.nullable
    names = {p.name for p in alt.props}
    if not (alt.open or alt.slots or inv.synonyms) and any(k not in names for k in value):
        return False  # a key this closed alternative does not declare
    for prop in alt.props:
        leaf = prop.node if isinstance(prop.node, Leaf) else None
        if prop.name not in value:
            if prop.required and leaf is None and not inv.synonyms:
                return False
            continue
        given = value[prop.name]
        if leaf is not None and leaf.enum is not None and len(leaf.enum) == 1:
            if not looks_like_token(given) and not _fits_leaf(leaf, given):
                return False  # a different constant (a discriminator value, say)
    return True


def _fits_leaf(leaf: Leaf, value: Any) -> bool:
    try:
        check_leaf(leaf, value, "$")
    except TemplateError:
        return False
    return True


def _wrapped(
    inv: "Inverse", node: OneOf, value: dict[str, Any], path: str, depth: int, required: bool
) -> Any:
    entries = value[ONE_OF]
    if len(value) != 1 or not isinstance(entries, list):
        raise TemplateError(
            "one_of",
            path,
            f"a {ONE_OF} object must hold only the list of alternatives",
            "replace the whole object by the one alternative you chose, filled",
        )
    aligned = len(entries) == len(node.alts)
    filled = [
        (i, e)
        for i, e in enumerate(entries)
        if not (
            untouched(e) or (aligned and isinstance(e, dict | list) and e == render(node.alts[i]))
        )
    ]
    if not filled:
        if not required:
            return OMIT
        raise TemplateError(
            "unfilled",
            path,
            "no alternative was chosen",
            f"replace the {ONE_OF} object by the one alternative you choose, filled",
        )
    if len(filled) > 1:
        raise TemplateError(
            "one_of",
            path,
            f"{len(filled)} alternatives were filled",
            "keep exactly one alternative and delete the others",
        )
    index, entry = filled[0]
    if aligned:
        return inv.convert(node.alts[index], entry, path, depth, required)
    return choose(inv, node, entry, path, depth, required)


def _discriminated(node: OneOf, value: Any) -> int | None:
    if node.discriminator is None or not isinstance(value, dict):
        return None
    prop, mapping = node.discriminator
    chosen = value.get(prop)
    if isinstance(chosen, str) and chosen in mapping:
        return mapping[chosen]
    if looks_like_token(chosen):
        for i, alt in enumerate(node.alts):
            if _token_of(alt, prop) == chosen:
                return i
    return None


def _token_of(alt: Node, prop: str) -> str | None:
    if isinstance(alt, Obj):
        for p in alt.props:
            if p.name == prop and isinstance(p.node, Leaf):
                return str(p.node.token)
    return None


def _fit(alt: Node, value: Any) -> tuple[int, int, int]:
    """How well a value that converted under `alt` matches it (higher is better)."""
    if isinstance(alt, Obj) and isinstance(value, dict):
        names = {p.name for p in alt.props}
        known = sum(1 for k in value if k in names)
        exact = sum(
            1
            for p in alt.props
            if isinstance(p.node, Leaf) and value.get(p.name) == str(p.node.token)
        )
        return (int(known == len(value)), known, exact)
    if isinstance(alt, Leaf):
        # The alternative of the type the value was written as: 1.0 keeps to a number one.
        written = "number" if isinstance(value, float) else json_type(value)
        return (int(alt.schema_type == written), 0, 0)
    return (0, 0, 0)
