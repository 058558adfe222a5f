"""allOf merged into one schema: properties united, required united, bounds tightened.

Members that are `$ref`s are resolved here; the pointers used are returned so the caller can
guard recursion through them like any other reference. oneOf/anyOf sets found in several
members are multiplied out (each alternative an allOf of one choice per set), within a limit.
"""

import json
import re
from typing import Any

from compiler.imprint.errors import TemplateError, pointer_child, unsatisfiable
from compiler.imprint.limits import MAX_ALTERNATIVES, MAX_NESTING
from compiler.imprint.refs import ANNOTATIONS, JSON_SCHEMA, OAS31, Resolver
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

# Private keys the merge leaves on its result (never on a caller's schema).
INHERITED = "x-forge-inherited-discriminator"

_LOWER = ("minLength", "minItems", "minProperties")
_UPPER = ("maxLength", "maxItems", "maxProperties")


class CircularMerge(ForgeError):
    """An allOf member re-enters a reference already being expanded on this path."""

    code = ErrorCode.TEMPLATE_INVALID

    def __init__(self, pointer: str) -> None:
        super().__init__(pointer)
        self.pointer = pointer


def merge_all_of(
    schema: dict[str, Any], resolver: Resolver, where: str, refs: tuple[str, ...]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return (schema without allOf, pointers resolved on the way, each once).

    `refs` are the references being expanded on the current path. A member that re-enters one
    of them is circular; a member merged twice elsewhere in the same allOf (a diamond, or a
    subtype redeclaring its base's property) is merged once, since conjunction is idempotent.

    Raises:
        CircularMerge: a member refers back to a schema being expanded (caller marks it).
        TemplateError: a malformed member, an unresolvable ref, or contradictory members.
    """
    used: list[str] = []
    merged = _merge(schema, _Walk(resolver, refs, used), where, (), 0)
    return merged, tuple(used)


class _Walk:
    """State shared by one merge: the resolver, the build path and every pointer merged."""

    def __init__(self, resolver: Resolver, refs: tuple[str, ...], used: list[str]) -> None:
        self.resolver = resolver
        self.refs = refs
        self.used = used


def _merge(
    schema: dict[str, Any], walk: _Walk, where: str, stack: tuple[str, ...], depth: int
) -> dict[str, Any]:
    if depth > MAX_NESTING:
        raise TemplateError(
            "limit", where, f"allOf nested deeper than {MAX_NESTING}", "flatten the schema"
        )
    members = schema["allOf"]
    if not isinstance(members, list) or not members:
        raise TemplateError("schema", where, "allOf must be a non-empty list", "fix the schema")
    own = {k: v for k, v in schema.items() if k != "allOf"}
    result: dict[str, Any] = {}
    parts: list[dict[str, Any]] = []
    for i, member in enumerate(members):
        at = pointer_child(pointer_child(where, "allOf"), i)
        part = _member(member, walk, at, stack, depth)
        if "discriminator" in part and INHERITED not in part:
            part = {**part, INHERITED: part["discriminator"]}
        parts.append(part)
        result = merge_two(result, part, at) if result else dict(part)
    if "discriminator" in own:
        result.pop(INHERITED, None)
    parts.append(own)
    result = merge_two(result, own, where)
    _nullability(result, parts)
    _closed_members(result, parts, where)
    return result


def _nullability(result: dict[str, Any], parts: list[dict[str, Any]]) -> None:
    """Allow null only if every member that states a type allows it.

    OpenAPI 3.0's nullable only widens the type written beside it.
    """
    typed = [p for p in parts if "type" in p]
    for flag in ("nullable", "x-nullable"):
        if typed and all(p.get(flag) is True for p in typed):
            result[flag] = True
        else:
            result.pop(flag, None)


def _closed_members(result: dict[str, Any], parts: list[dict[str, Any]], where: str) -> None:
    """Drop properties that a member with additionalProperties: false does not declare.

    JSON Schema evaluates each member alone, so such a member forbids every property it does
    not declare itself, whatever the other members declare.
    """
    closed = [p for p in parts if p.get("additionalProperties") is False]
    props = result.get("properties")
    if not closed or not isinstance(props, dict):
        return
    kept = {name: s for name, s in props.items() if all(_declares(p, name) for p in closed)}
    for name in result.get("required", []):
        if name in props and name not in kept:
            raise TemplateError(
                "schema",
                where,
                f"{name!r} is required, but an allOf member with additionalProperties: false "
                "does not declare it, so no payload can satisfy the schema",
                "declare it in that member or use unevaluatedProperties: false on the parent",
            )
    result["properties"] = kept


def _declares(part: dict[str, Any], name: str) -> bool:
    props = part.get("properties")
    if isinstance(props, dict) and name in props:
        return True
    patterns = part.get("patternProperties")
    if isinstance(patterns, dict):
        for pattern in patterns:
            try:
                if re.search(pattern, name):
                    return True
            except re.error:
                return True
    return False


def _member(
    member: Any, walk: _Walk, at: str, stack: tuple[str, ...], depth: int
) -> dict[str, Any]:
    if member is True:
        return {}
    if member is False:
        raise unsatisfiable(at, "an allOf member is false")
    if not isinstance(member, dict):
        raise TemplateError(
            "schema",
            at,
            f"an allOf member must be an object, got {type(member).__name__}",
            "fix it",
        )
    if "$ref" in member:
        pointer, target = walk.resolver.resolve(member["$ref"], at)
        if target is False:
            raise unsatisfiable(at, f"the allOf member {pointer} is false")
        if not isinstance(target, dict):
            raise TemplateError("schema", pointer, "a $ref target must be an object", "fix it")
        siblings = {k: v for k, v in member.items() if k != "$ref" and k not in ANNOTATIONS}
        with_siblings = bool(siblings) and walk.resolver.dialect in (OAS31, JSON_SCHEMA)
        on_path = (*walk.refs, *stack)
        others = tuple(p for p in on_path if p != pointer)
        target, polymorphic = _without_subtypes(target, walk.resolver, others)
        if pointer in stack or (pointer in walk.refs and not polymorphic):
            raise CircularMerge(pointer)
        if pointer in walk.used:
            # Already merged into this allOf (a diamond): merging it again changes nothing.
            return _member(siblings, walk, at, stack, depth) if with_siblings else {}
        walk.used.append(pointer)
        member = {"allOf": [target, siblings]} if with_siblings else target
        at = pointer
        stack = (*stack, pointer)
    if "allOf" in member:
        return _merge(member, walk, at, stack, depth + 1)
    return dict(member)


def _without_subtypes(
    target: dict[str, Any], resolver: Resolver, on_path: tuple[str, ...]
) -> tuple[dict[str, Any], bool]:
    """Drop a base's oneOf/anyOf that lists the subtype pulling the base in through allOf.

    The OpenAPI polymorphism pattern: `Pet` has `oneOf: [Cat, Dog]` and a discriminator, and
    `Cat` is `allOf: [Pet, {...}]`. Read literally, a Cat must again be exactly one of Cat or
    Dog (an endless regress); what the pattern means is that a Cat has Pet's properties and its
    own. So when a set of alternatives points back at a schema on the current path, the set is
    left out of the merge (the discriminator stays, so the subtype's name is still implied).
    """
    dropped = [
        key
        for key in ("oneOf", "anyOf")
        if isinstance(target.get(key), list)
        and any(_points_to(alt, resolver, on_path) for alt in target[key])
    ]
    if not dropped:
        return target, False
    return {k: v for k, v in target.items() if k not in dropped}, True


def _points_to(alt: Any, resolver: Resolver, pointers: tuple[str, ...]) -> bool:
    if not isinstance(alt, dict) or not isinstance(alt.get("$ref"), str):
        return False
    try:
        pointer, _ = resolver.resolve(alt["$ref"], "#")
    except TemplateError:
        return False  # reported where the alternative itself is compiled
    return pointer in pointers


def merge_two(a: dict[str, Any], b: dict[str, Any], where: str) -> dict[str, Any]:
    """Merge schema `b` into schema `a` (neither holds allOf) as JSON Schema conjunction."""
    out = dict(a)
    for key, value in b.items():
        if key not in out:
            out[key] = value
        elif key in _MERGERS:
            out[key] = _MERGERS[key](out[key], value, where)
        elif key in _LOWER:
            out[key] = _merge_minimum(out[key], value, where)
        elif key in _UPPER:
            out[key] = _merge_maximum(out[key], value, where)
        elif key in ("readOnly", "writeOnly", "uniqueItems"):
            out[key] = bool(out[key]) or bool(value)
    return out


def _types(value: Any) -> list[str]:
    return [value] if isinstance(value, str) else list(value) if isinstance(value, list) else []


def _merge_type(a: Any, b: Any, where: str) -> Any:
    left, right = _types(a), _types(b)
    both = [t for t in left if t in right]
    both += [
        "integer" for t in left if t == "integer" and "number" in right and "integer" not in both
    ]
    both += [
        "integer" for t in right if t == "integer" and "number" in left and "integer" not in both
    ]
    if not both:
        raise TemplateError(
            "schema",
            where,
            f"allOf members disagree on type ({a} and {b}): no value can satisfy both",
            "make the members' types agree",
        )
    return both[0] if len(both) == 1 else both


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True)


def _merge_enum(a: Any, b: Any, where: str) -> Any:
    right = {_canon(v) for v in b} if isinstance(b, list) else set()
    both = [v for v in a if _canon(v) in right] if isinstance(a, list) else []
    if not both:
        raise TemplateError(
            "schema", where, "allOf members' enums share no value", "make the enums overlap"
        )
    return both


def _merge_const(a: Any, b: Any, where: str) -> Any:
    if _canon(a) != _canon(b):
        raise TemplateError("schema", where, "allOf members' consts differ", "use one const")
    return a


def _merge_props(a: Any, b: Any, where: str) -> Any:
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise TemplateError("schema", where, "properties must be an object", "fix the schema")
    out = dict(a)
    for name, schema in b.items():
        out[name] = schema if name not in out or out[name] is schema else _both(out[name], schema)
    return out


def _merge_required(a: Any, b: Any, where: str) -> Any:
    if not isinstance(a, list) or not isinstance(b, list):
        raise TemplateError("schema", where, "required must be a list of names", "fix the schema")
    return a + [n for n in b if n not in a]


def _merge_additional(a: Any, b: Any, where: str) -> Any:
    if a is False or b is False:
        return False
    if a is True or a is None:
        return b
    if b is True or b is None:
        return a
    return _both(a, b)


def _merge_subschema(a: Any, b: Any, where: str) -> Any:
    return _both(a, b)


def _both(a: Any, b: Any) -> dict[str, Any]:
    return {"allOf": [a, b]}


def _merge_alternatives(a: Any, b: Any, where: str) -> Any:
    if not isinstance(a, list) or not isinstance(b, list):
        raise TemplateError("schema", where, "oneOf/anyOf must be a list", "fix the schema")
    if len(a) * len(b) > MAX_ALTERNATIVES:
        raise TemplateError(
            "limit",
            where,
            f"allOf multiplies oneOf/anyOf into {len(a) * len(b)} alternatives "
            f"(limit {MAX_ALTERNATIVES})",
            "model the alternatives explicitly with fewer combinations",
        )
    return [_both(x, y) for x in a for y in b]


def _merge_minimum(a: Any, b: Any, where: str) -> Any:
    return max(a, b) if _num(a) and _num(b) else a


def _merge_maximum(a: Any, b: Any, where: str) -> Any:
    return min(a, b) if _num(a) and _num(b) else a


def _merge_exclusive_min(a: Any, b: Any, where: str) -> Any:
    if isinstance(a, bool) and isinstance(b, bool):  # draft-04 flags
        return a or b
    return _merge_minimum(a, b, where)


def _merge_exclusive_max(a: Any, b: Any, where: str) -> Any:
    if isinstance(a, bool) and isinstance(b, bool):
        return a or b
    return _merge_maximum(a, b, where)


def _merge_pattern(a: Any, b: Any, where: str) -> Any:
    if a == b:
        return a
    # Both must match: one regex with a look-ahead per pattern (each searched from the start).
    return f"^(?=[\\s\\S]*?(?:{a}))(?=[\\s\\S]*?(?:{b}))"


def _num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_MERGERS: dict[str, Any] = {
    "type": _merge_type,
    "enum": _merge_enum,
    "const": _merge_const,
    "properties": _merge_props,
    "patternProperties": _merge_props,
    "required": _merge_required,
    "additionalProperties": _merge_additional,
    "unevaluatedProperties": _merge_additional,
    "items": _merge_subschema,
    "contentSchema": _merge_subschema,
    "oneOf": _merge_alternatives,
    "anyOf": _merge_alternatives,
    "minimum": _merge_minimum,
    "maximum": _merge_maximum,
    "exclusiveMinimum": _merge_exclusive_min,
    "exclusiveMaximum": _merge_exclusive_max,
    "pattern": _merge_pattern,
}
