"""oneOf/anyOf to `{ONE_OF}`: alternatives (flattened), shared keywords, discriminator values."""

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compiler.imprint.errors import TemplateError, pointer_child, unsatisfiable
from compiler.imprint.leaf import schema_types
from compiler.imprint.limits import MAX_ALTERNATIVES
from compiler.imprint.nodes import Leaf, Node, OneOf
from compiler.imprint.refs import ANNOTATIONS

if TYPE_CHECKING:  # build imports this module; the compiler is only passed in
    from compiler.imprint.build import Compiler, Pos

# nullable is read off the choice itself (a null alternative), never pushed into alternatives.
_CHOICE_KEYS = ("oneOf", "anyOf", "discriminator", "nullable", "x-nullable")


def build_choice(compiler: "Compiler", schema: dict[str, Any], pos: "Pos") -> Node:
    """Compile a schema with oneOf/anyOf into a `OneOf` node (or its only alternative).

    anyOf is templated like oneOf: the model picks one alternative, which satisfies anyOf too.
    Keywords beside oneOf/anyOf apply to every alternative, so each alternative is compiled as
    an allOf of those keywords and the alternative.
    """
    alternatives = _alternatives(schema, pos.where)
    base = {k: v for k, v in schema.items() if k not in _CHOICE_KEYS}
    shared = any(k not in ANNOTATIONS and not k.startswith("x-") for k in base)
    _, nullable = schema_types(
        {k: v for k, v in schema.items() if k not in _CHOICE_KEYS[:3]},
        compiler.resolver.dialect,
        pos.where,
    )
    raw_disc = schema.get("discriminator")
    disc: dict[str, Any] = raw_disc if isinstance(raw_disc, dict) else {}
    prop = disc.get("propertyName")
    alts: list[Node] = []
    chooser: dict[str, int] = {}
    for i, alt in enumerate(alternatives):
        at = pointer_child(pointer_child(pos.where, "oneOf" if "oneOf" in schema else "anyOf"), i)
        implied = None
        if isinstance(prop, str) and isinstance(alt, dict) and "$ref" in alt:
            pointer, _ = compiler.resolver.resolve(alt["$ref"], at)
            implied = (prop, _discriminator_value(disc, pointer))
        sub = {"allOf": [base, alt]} if shared else alt
        child = replace(pos, where=at, depth=pos.depth + 1, implied=implied)
        found = compiler.satisfiable([sub], child)  # an alternative no value fits is left out
        if not found:
            continue
        if implied is not None:
            chooser.setdefault(implied[1], len(alts))
        _append(alts, chooser, found[0], prop)
    if nullable and not any(isinstance(a, Leaf) and a.schema_type == "null" for a in alts):
        alts.append(compiler.null_leaf(pos))
    if not alts:
        raise unsatisfiable(pos.where, "no alternative of the oneOf/anyOf can be satisfied")
    if len(alts) == 1:
        return alts[0]
    return OneOf(tuple(alts), (prop, chooser) if isinstance(prop, str) and chooser else None)


def _alternatives(schema: dict[str, Any], where: str) -> list[Any]:
    sets = [schema[k] for k in ("oneOf", "anyOf") if k in schema]
    for group in sets:
        if not isinstance(group, list) or not group:
            raise TemplateError(
                "schema", where, "oneOf/anyOf must be a non-empty list", "fix the schema"
            )
    if len(sets) == 1:
        return list(sets[0])
    if len(sets[0]) * len(sets[1]) > MAX_ALTERNATIVES:
        raise TemplateError(
            "limit",
            where,
            f"oneOf x anyOf gives {len(sets[0]) * len(sets[1])} alternatives "
            f"(limit {MAX_ALTERNATIVES})",
            "model the combinations explicitly",
        )
    return [{"allOf": [a, b]} for a in sets[0] for b in sets[1]]


def _append(alts: list[Node], chooser: dict[str, int], node: Node, prop: Any) -> None:
    """Add an alternative; a nested choice is flattened into this one."""
    if not isinstance(node, OneOf):
        alts.append(node)
        return
    offset = len(alts)
    alts.extend(node.alts)
    if node.discriminator is not None and node.discriminator[0] == prop:
        for value, index in node.discriminator[1].items():
            chooser.setdefault(value, offset + index)


def _discriminator_value(disc: dict[str, Any], pointer: str) -> str:
    name = pointer.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
    mapping = disc.get("mapping")
    if isinstance(mapping, dict):
        for value, target in mapping.items():
            if target in (pointer, name):
                return str(value)
    return name
