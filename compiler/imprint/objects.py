"""Object schemas to nodes: declared properties, maps (`{KEY|string}`), discriminator values."""

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from compiler.imprint.errors import TemplateError, pointer_child, unsatisfiable
from compiler.imprint.limits import MAX_PROPERTIES
from compiler.imprint.merge import INHERITED
from compiler.imprint.nodes import KeySlot, Leaf, Node, Obj, Prop
from compiler.imprint.tokens import Token

if TYPE_CHECKING:  # build imports this module; the compiler is only passed in
    from compiler.imprint.build import Compiler, Pos


def build_object(compiler: "Compiler", schema: dict[str, Any], pos: "Pos", nullable: bool) -> Obj:
    """Compile an object schema with a declared shape."""
    props = schema.get("properties", {})
    if not isinstance(props, dict):
        raise TemplateError("schema", pos.where, "properties must be an object", "fix the schema")
    if len(props) > MAX_PROPERTIES:
        raise TemplateError(
            "limit",
            pos.where,
            f"the object declares {len(props)} properties (limit {MAX_PROPERTIES})",
            "split the schema, or template the part the model must fill",
        )
    required = schema.get("required", [])
    if not isinstance(required, list) or not all(isinstance(n, str) for n in required):
        raise TemplateError(
            "schema", pos.where, "required must be a list of property names", "fix the schema"
        )
    extra = schema.get("additionalProperties", schema.get("unevaluatedProperties"))
    closed = extra is False
    implied = pos.implied or _inherited(schema, pos.origin)
    out: list[Prop] = []
    forbidden: list[str] = []
    for name, sub in props.items():
        at = pointer_child(pointer_child(pos.where, "properties"), name)
        child = replace(
            pos, where=at, required=name in required, depth=pos.depth + 1, implied=None, origin=None
        )
        found = compiler.satisfiable([sub], child)
        if not found:
            if name in required:
                raise unsatisfiable(at, f"the required property {name!r} can take no value")
            forbidden.append(name)  # `false` (or unsatisfiable): the property must be absent
            continue
        node = found[0]
        if implied is not None and name == implied[0] and _can_imply(node, implied[1]):
            out.append(Prop(name, _implied_leaf(implied[1]), True))
        else:
            out.append(Prop(name, node, name in required))
    if implied is not None and implied[0] not in props and not closed:
        out.append(Prop(implied[0], _implied_leaf(implied[1]), True))
    declared = {p.name for p in out}
    for name in required:
        if name in declared:
            continue
        if closed:
            raise TemplateError(
                "schema",
                pos.where,
                f"{name!r} is required but not declared, and additionalProperties is false",
                "declare the property or drop it from required",
            )
        sub = extra if isinstance(extra, dict) else {}
        at = pointer_child(pos.where, "required")
        node = compiler.node(sub, replace(pos, where=at, required=True, depth=pos.depth + 1))
        out.append(Prop(name, node, True))
        declared.add(name)
    return Obj(
        props=tuple(out),
        slots=_slots(compiler, schema, pos, extra),
        open=extra is True,
        forbidden=tuple(forbidden),
        nullable=nullable,
        min_props=_count(schema, "minProperties", pos.where),
        max_props=_count(schema, "maxProperties", pos.where),
    )


def _slots(
    compiler: "Compiler", schema: dict[str, Any], pos: "Pos", extra: Any
) -> tuple[KeySlot, ...]:
    slots: list[KeySlot] = []
    patterns = schema.get("patternProperties", {})
    if not isinstance(patterns, dict):
        raise TemplateError(
            "schema", pos.where, "patternProperties must be an object", "fix the schema"
        )
    raw_names = schema.get("propertyNames")
    names: dict[str, Any] = raw_names if isinstance(raw_names, dict) else {}
    child = replace(pos, depth=pos.depth + 1, implied=None, origin=None)
    for pattern, sub in patterns.items():
        at = pointer_child(pointer_child(pos.where, "patternProperties"), pattern)
        key = Token(kind="KEY", type="string", modifiers=(("pattern", pattern),))
        for node in compiler.satisfiable([sub], replace(child, where=at)):
            slots.append(KeySlot(key, pattern, node))
    if isinstance(extra, dict):
        at = pointer_child(pos.where, "additionalProperties")
        for node in compiler.satisfiable([extra], replace(child, where=at)):
            slots.append(KeySlot(_key_token(names), None, node))
    return tuple(slots)


def _key_token(names: dict[str, Any]) -> Token:
    allowed = [names["const"]] if "const" in names else names.get("enum")
    if isinstance(allowed, list) and allowed:
        # Keys are strings: only the enum's strings can ever be keys.
        keys = tuple(dict.fromkeys(v for v in allowed if isinstance(v, str)))
        return Token(kind="KEY_ENUM", values=keys)
    mods: list[tuple[str, str]] = []
    if isinstance(names.get("pattern"), str):
        mods.append(("pattern", names["pattern"]))
    for key, name in (("minLength", "min_length"), ("maxLength", "max_length")):
        if isinstance(names.get(key), int) and not isinstance(names.get(key), bool):
            mods.append((name, str(names[key])))
    return Token(kind="KEY", type="string", modifiers=tuple(mods))


def _inherited(schema: dict[str, Any], origin: str | None) -> tuple[str, str] | None:
    """The discriminator value a named subtype (allOf over a base with a discriminator) implies."""
    disc = schema.get(INHERITED)
    if (
        origin is None
        or not isinstance(disc, dict)
        or not isinstance(disc.get("propertyName"), str)
    ):
        return None
    name = origin.rsplit("/", 1)[-1].replace("~1", "/").replace("~0", "~")
    mapping = disc.get("mapping")
    if isinstance(mapping, dict):
        for value, target in mapping.items():
            if target in (origin, name):
                return disc["propertyName"], str(value)
    return disc["propertyName"], name


def _can_imply(node: Node, value: str) -> bool:
    if not isinstance(node, Leaf) or node.schema_type not in ("string", None):
        return False
    return node.enum is None or value in node.enum


def _implied_leaf(value: str) -> Leaf:
    token = Token(kind="AUTO", type="string", modifiers=(("default", json.dumps(value)),))
    return Leaf(token, True, "string", (value,), always_auto=True)


def _count(schema: dict[str, Any], key: str, where: str) -> int | None:
    value = schema.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TemplateError(
            "schema", where, f"{key} must be a non-negative integer, got {value!r}", "fix it"
        )
    return value
