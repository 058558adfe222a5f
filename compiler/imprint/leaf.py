"""Leaf schemas to tokens: the type a schema means, its nullability, and its inline constraints."""

import json
import math
from typing import Any

from compiler.imprint.errors import TemplateError
from compiler.imprint.limits import MAX_ENUM_VALUES, MAX_INTEGER_BITS
from compiler.imprint.nodes import Leaf
from compiler.imprint.refs import OAS2, OAS30
from compiler.imprint.tokens import TYPES, Token, format_enum_value, format_number, format_range
from compiler.jsontypes import json_type

_OBJECT_HINTS = (
    "properties",
    "patternProperties",
    "additionalProperties",
    "unevaluatedProperties",
    "required",
    "minProperties",
    "maxProperties",
    "propertyNames",
)
_ARRAY_HINTS = ("items", "prefixItems", "minItems", "maxItems", "uniqueItems")
_STRING_HINTS = ("pattern", "minLength", "maxLength", "contentMediaType", "x-serialization")
_NUMBER_HINTS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf")
_FORMAT_TYPES = {"int32": "integer", "int64": "integer", "float": "number", "double": "number"}


def schema_types(schema: dict[str, Any], dialect: str, where: str) -> tuple[list[str], bool]:
    """Return (the non-null types a schema allows, whether it allows null).

    An empty list means "untyped": any JSON value. `nullable: true` counts in OpenAPI 3.0,
    `x-nullable: true` in Swagger 2.0, `"null"` in a type list everywhere.
    """
    raw = schema.get("type")
    if raw is None:
        types = _inferred(schema)
    elif isinstance(raw, str):
        types = [raw]
    elif isinstance(raw, list) and all(isinstance(t, str) for t in raw):
        types = list(dict.fromkeys(raw))
    else:
        raise TemplateError(
            "schema", where, f"type must be a name or a list of names, got {raw!r}", "fix it"
        )
    for t in types:
        if t not in TYPES:
            hint = "use one of " + ", ".join(TYPES)
            if t == "file" and dialect == OAS2:
                hint = "type file is only valid on a formData parameter"
            raise TemplateError("schema", where, f"unknown type {t!r}", hint)
    nullable = "null" in types
    if dialect == OAS30 and schema.get("nullable") is True and types:
        nullable = True
    if dialect == OAS2 and schema.get("x-nullable") is True and types:
        nullable = True
    return [t for t in types if t != "null"], nullable


def _literal_type(value: Any) -> str:
    # The type a schema's constant declares: a float literal is a number as written (2.0 too,
    # which JSON Schema would also call an integer), so its token reads as the schema does.
    return "number" if isinstance(value, float) else json_type(value)


def _inferred(schema: dict[str, Any]) -> list[str]:
    if "const" in schema:
        return [_literal_type(schema["const"])]
    if "enum" in schema:
        return []
    if any(k in schema for k in _OBJECT_HINTS):
        return ["object"]
    if any(k in schema for k in _ARRAY_HINTS):
        return ["array"]
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in _FORMAT_TYPES:
        return [_FORMAT_TYPES[fmt]]
    if any(k in schema for k in _STRING_HINTS) or isinstance(fmt, str):
        return ["string"]
    if any(k in schema for k in _NUMBER_HINTS):
        return ["number"]
    return []


def make_leaf(
    schema: dict[str, Any],
    schema_type: str | None,
    nullable: bool,
    *,
    required: bool,
    where: str,
    dialect: str,
) -> Leaf:
    """Build the token for a leaf schema (scalar, free-form object/array or untyped)."""
    enum = _allowed_enum(schema, schema_type, nullable, where)
    always_auto = bool(schema.get("x-forge-auto"))
    if "const" in schema:
        enum = [schema["const"]]
    if enum is not None and len(enum) == 1:
        value = enum[0]
        token = Token(
            kind="AUTO",
            type=schema_type or _literal_type(value),
            nullable=value is None and schema_type is not None,
            modifiers=(("default", _compact(value)),),
        )
        return Leaf(token, required, schema_type, tuple(enum), always_auto=True)
    if enum is not None:
        kind = "FILL_ENUM" if required else "OPTIONAL_ENUM"
        token = Token(kind=kind, values=tuple(format_enum_value(v) for v in enum))
        return Leaf(token, required, schema_type, tuple(enum))
    auto = always_auto or schema.get("readOnly") is True
    kind = "AUTO" if auto else "FILL" if required else "OPTIONAL"
    mods = _modifiers(schema, schema_type, where, dialect)
    if always_auto and isinstance(schema["x-forge-auto"], str) and not _has(mods, "format"):
        mods = [("format", schema["x-forge-auto"]), *mods]
    token = Token(kind=kind, type=schema_type or "string", nullable=nullable, modifiers=tuple(mods))
    return Leaf(token, required, schema_type, None, always_auto=always_auto)


def _has(mods: list[tuple[str, str]], name: str) -> bool:
    return any(key == name for key, _ in mods)


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _allowed_enum(
    schema: dict[str, Any], schema_type: str | None, nullable: bool, where: str
) -> list[Any] | None:
    if "enum" not in schema:
        return None
    values = schema["enum"]
    if not isinstance(values, list) or not values:
        raise TemplateError("schema", where, "enum must be a non-empty list", "fix the schema")
    if len(values) > MAX_ENUM_VALUES:
        raise TemplateError(
            "limit",
            where,
            f"enum has {len(values)} values (limit {MAX_ENUM_VALUES})",
            "use a pattern or a plain string for such a large set",
        )
    allowed: list[Any] = []
    seen: set[str] = set()
    for v in values:
        fits = schema_type is None or fits_type(v, schema_type) or (v is None and nullable)
        key = json.dumps(v, sort_keys=True)
        if fits and key not in seen:
            seen.add(key)
            allowed.append(v)
    if not allowed:
        raise TemplateError(
            "schema",
            where,
            f"no enum value is of type {schema_type}: nothing can be sent",
            "fix the enum or the type",
        )
    return allowed


def fits_type(value: Any, schema_type: str) -> bool:
    """True when a JSON value is of the JSON Schema type (an integral float is an integer)."""
    actual = json_type(value)
    if schema_type == "number":
        return actual in ("integer", "number")
    return actual == schema_type


def _modifiers(
    schema: dict[str, Any], schema_type: str | None, where: str, dialect: str
) -> list[tuple[str, str]]:
    mods: list[tuple[str, str]] = []
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt:
        mods.append(("format", fmt))
    if schema_type in ("integer", "number"):
        mods += _bounds(schema, schema_type, where, dialect)
    if schema_type in ("string", None):
        pattern = schema.get("pattern")
        if isinstance(pattern, str):
            mods.append(("pattern", pattern))
        for key, name in (("minLength", "min_length"), ("maxLength", "max_length")):
            if key in schema:
                mods.append((name, str(_count(schema[key], key, where))))
    if "default" in schema:
        try:
            mods.append(("default", _compact(schema["default"])))
        except (TypeError, ValueError):
            raise TemplateError(
                "schema", where, "default is not a JSON value", "fix the default"
            ) from None
    return mods


def _count(value: Any, key: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise TemplateError(
            "schema", where, f"{key} must be a non-negative integer, got {value!r}", "fix it"
        )
    return value


def _number(value: Any, key: str, where: str) -> int | float:
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > MAX_INTEGER_BITS:  # math.isfinite would overflow on it
            raise TemplateError(
                "schema", where, f"{key} is an integer too wide to write out", "use a smaller bound"
            )
        return value
    if not isinstance(value, float) or not math.isfinite(value):
        raise TemplateError("schema", where, f"{key} must be a number, got {value!r:.60}", "fix it")
    return value


def numeric_bounds(
    schema: dict[str, Any], where: str, dialect: str
) -> tuple[tuple[int | float, bool] | None, tuple[int | float, bool] | None]:
    """Return ((lower, exclusive) | None, (upper, exclusive) | None) in either draft's spelling."""
    draft4 = dialect in (OAS2, OAS30)
    lower: tuple[int | float, bool] | None = None
    upper: tuple[int | float, bool] | None = None
    if "minimum" in schema:
        lower = (_number(schema["minimum"], "minimum", where), False)
    if "maximum" in schema:
        upper = (_number(schema["maximum"], "maximum", where), False)
    xmin, xmax = schema.get("exclusiveMinimum"), schema.get("exclusiveMaximum")
    if isinstance(xmin, bool) or (draft4 and xmin is not None):
        lower = (lower[0], bool(xmin)) if lower else None
    elif xmin is not None:
        value = _number(xmin, "exclusiveMinimum", where)
        lower = (value, True) if lower is None or value >= lower[0] else lower
    if isinstance(xmax, bool) or (draft4 and xmax is not None):
        upper = (upper[0], bool(xmax)) if upper else None
    elif xmax is not None:
        value = _number(xmax, "exclusiveMaximum", where)
        upper = (value, True) if upper is None or value <= upper[0] else upper
    return lower, upper


def _bounds(
    schema: dict[str, Any], schema_type: str, where: str, dialect: str
) -> list[tuple[str, str]]:
    lower, upper = numeric_bounds(schema, where, dialect)
    if schema_type == "integer":  # integers say it inclusively: > 0 is range:1-
        if lower is not None:
            lower = (math.floor(lower[0]) + 1 if lower[1] else math.ceil(lower[0]), False)
        if upper is not None:
            upper = (math.ceil(upper[0]) - 1 if upper[1] else math.floor(upper[0]), False)
        if lower is not None and upper is not None and lower[0] > upper[0]:
            raise TemplateError(
                "schema", where, "the bounds admit no integer", "fix minimum/maximum"
            )
    mods: list[tuple[str, str]] = []
    inclusive = [b if b and not b[1] else None for b in (lower, upper)]
    exclusive = [b if b and b[1] else None for b in (lower, upper)]
    for name, pair in (("range", inclusive), ("exclusive_range", exclusive)):
        if pair[0] is not None or pair[1] is not None:
            lo = pair[0][0] if pair[0] else None
            hi = pair[1][0] if pair[1] else None
            mods.append((name, format_range(lo, hi)))
    if "multipleOf" in schema:
        step = _number(schema["multipleOf"], "multipleOf", where)
        if step <= 0:
            raise TemplateError("schema", where, "multipleOf must be > 0", "fix it")
        mods.append(("multiple_of", format_number(step)))
    return mods
