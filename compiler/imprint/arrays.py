"""Array schemas to nodes: lists, tuples (a schema per position), arrays that must be empty."""

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compiler.imprint.errors import TemplateError, pointer_child, unsatisfiable
from compiler.imprint.leaf import make_leaf
from compiler.imprint.nodes import Arr, Leaf, Node, Tup

if TYPE_CHECKING:  # build imports this module; the compiler is only passed in
    from compiler.imprint.build import Compiler, Pos


def build_array(
    compiler: "Compiler", schema: dict[str, Any], pos: "Pos", nullable: bool
) -> Node | None:
    """Compile an array schema; None for a free-form array (no item schema: one token)."""
    low = count(schema, "minItems", pos.where)
    high = count(schema, "maxItems", pos.where)
    items = schema.get("items")
    if isinstance(items, list):  # draft-04 tuple: items per position, then additionalItems
        return _tuple(compiler, schema, pos, nullable, ("items", items), "additionalItems")
    prefix = schema.get("prefixItems")
    if isinstance(prefix, list):
        return _tuple(compiler, schema, pos, nullable, ("prefixItems", prefix), "items")
    if items is None or items is True:
        return None
    item = _optional(compiler, items, _at(pos, "items"))
    if item is None:
        return _empty(compiler, pos, nullable, low)
    unique = schema.get("uniqueItems") is True
    return Arr(item, nullable=nullable, min_items=low, max_items=high, unique=unique)


def _tuple(
    compiler: "Compiler",
    schema: dict[str, Any],
    pos: "Pos",
    nullable: bool,
    given: tuple[str, list[Any]],
    rest_key: str,
) -> Node:
    low = count(schema, "minItems", pos.where)
    high = count(schema, "maxItems", pos.where)
    key, schemas = given
    if high is not None:
        schemas = schemas[:high]  # positions past maxItems can never be filled
    positions: list[Node] = []
    for i, sub in enumerate(schemas):
        at = replace(
            _at(pos, key),
            where=pointer_child(pointer_child(pos.where, key), i),
            required=i < (low or 0),
        )
        node = _optional(compiler, sub, at)
        if node is None:  # no item can stand here, so the array ends before it
            break
        positions.append(node)
    rest: Node | None = None
    if len(positions) == len(schemas) and (high is None or high > len(positions)):
        rest = _optional(compiler, schema.get(rest_key, True), _at(pos, rest_key))
    if low is not None and low > len(positions) and rest is None:
        raise unsatisfiable(pos.where, f"minItems is {low}, but at most {len(positions)} fit")
    unique = schema.get("uniqueItems") is True
    if not positions:
        if rest is None:
            return _empty(compiler, pos, nullable, low)
        return Arr(rest, nullable=nullable, min_items=low, max_items=high, unique=unique)
    return Tup(tuple(positions), rest, nullable, low, high, unique)


def _optional(compiler: "Compiler", schema: Any, pos: "Pos") -> Node | None:
    """The node for `schema`, or None when no value satisfies it."""
    found = compiler.satisfiable([schema], pos)
    return found[0] if found else None


def _empty(compiler: "Compiler", pos: "Pos", nullable: bool, low: int | None) -> Leaf:
    """An array that can only be empty: an AUTO `[]` (or a choice of `[]` and null)."""
    if low:
        raise unsatisfiable(pos.where, f"no item is allowed, but minItems is {low}")
    schema: dict[str, Any] = {"enum": [[], None]} if nullable else {"const": []}
    return make_leaf(
        schema,
        "array",
        nullable,
        required=pos.required,
        where=pos.where,
        dialect=compiler.resolver.dialect,
    )


def _at(pos: "Pos", key: str) -> "Pos":
    return replace(pos, where=pointer_child(pos.where, key), depth=pos.depth + 1)


def count(schema: dict[str, Any], key: str, where: str) -> int | None:
    """A non-negative integer keyword (minItems, maxProperties, ...), or None when absent."""
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TemplateError(
            "schema", where, f"{key} must be a non-negative integer, got {value!r}", "fix it"
        )
    return value
