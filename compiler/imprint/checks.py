"""Checks a filled value against its token: type, enum, range, step, length, pattern, format."""

import functools
import math
import re
from fractions import Fraction
from typing import Any

from compiler.imprint.errors import TemplateError, child_path
from compiler.imprint.limits import MAX_INTEGER_BITS, MAX_NESTING
from compiler.imprint.nodes import Leaf
from compiler.imprint.tokens import Token, format_enum_value
from compiler.jsontypes import json_type

_FORMATS = {
    "uuid": re.compile(r"^[0-9a-fA-F]{8}-(?:[0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$"),
    "date": re.compile(r"^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])$"),
    "date-time": re.compile(
        r"^\d{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])[Tt ]"
        r"(?:[01]\d|2[0-3]):[0-5]\d:(?:[0-5]\d|60)(?:\.\d+)?(?:[Zz]|[+-](?:[01]\d|2[0-3]):[0-5]\d)$"
    ),
    "email": re.compile(r"^[^@\s]+@[^@\s]+$"),
    "ipv4": re.compile(r"^(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)$"),
}
# A lone UTF-16 surrogate: JSON text can spell one (backslash u d800), UTF-8 cannot carry it.
_SURROGATE = re.compile("[\ud800-\udfff]")
_INT_FORMATS = {"int32": 2**31, "int64": 2**63}
_EXAMPLE = {
    "string": '"text"',
    "integer": "42",
    "number": "4.2",
    "boolean": "true",
    "null": "null",
    "object": "{...}",
    "array": "[...]",
}


def check_leaf(leaf: Leaf, value: Any, path: str) -> Any:
    """Return `value` (an integral float becomes an int) if it satisfies the leaf's token.

    Raises:
        TemplateError: naming `path`, the broken rule and what to send instead.
    """
    token = leaf.token
    if isinstance(value, int) and not isinstance(value, bool):
        check_integer(value, path)  # before anything prints it
    if leaf.enum is not None:
        return _enum(leaf, value, path)
    if value is None:
        if token.nullable or leaf.schema_type in ("null", None):
            return None
        raise _type_error(path, token, value)
    if leaf.schema_type is None:
        check_json(value, path)
        return value
    value = _typed(leaf.schema_type, token, value, path)
    if isinstance(value, int | float) and not isinstance(value, bool):
        _numeric(token, value, path)
    elif isinstance(value, str):
        _text(token, value, path)
    return value


def _typed(schema_type: str, token: Token, value: Any, path: str) -> Any:
    actual = json_type(value)
    if schema_type == "integer" and actual == "integer" and isinstance(value, float):
        return int(value)  # a whole float (1.0) is an integer: sent as one
    if schema_type == "number" and actual == "integer":
        return value
    if actual != schema_type:
        raise _type_error(path, token, value)
    if actual == "number" and not math.isfinite(value):
        raise TemplateError("type", path, f"{value} is not a JSON number", "send a finite number")
    if actual in ("object", "array"):
        check_json(value, path)
    return value


def _type_error(path: str, token: Token, value: Any) -> TemplateError:
    wanted = f"{token.type}{' or null' if token.nullable else ''}"
    return TemplateError(
        "type",
        path,
        f"{token} needs a {wanted}, got {json_type(value)} {_show(value)}",
        f"send a {token.type} such as {_EXAMPLE.get(token.type or '', 'a value')}",
    )


def _enum(leaf: Leaf, value: Any, path: str) -> Any:
    assert leaf.enum is not None
    for option in leaf.enum:  # the option written as the value was first (1 before 1.0)
        if (
            json_type(option) == json_type(value)
            and isinstance(option, float) == isinstance(value, float)
            and option == value
        ):
            return option
    if isinstance(value, str):
        for option in leaf.enum:
            if not isinstance(option, str) and format_enum_value(option) == value:
                return option
    if isinstance(value, int | float) and not isinstance(value, bool):
        for option in leaf.enum:
            if json_type(option) in ("integer", "number") and option == value:
                return option
    shown = ", ".join(format_enum_value(o) for o in leaf.enum[:20])
    raise TemplateError(
        "enum",
        path,
        f"{_show(value)} is not one of the allowed values",
        f"pick exactly one of: {shown}{' ...' if len(leaf.enum) > 20 else ''}",
    )


def _numeric(token: Token, value: int | float, path: str) -> None:
    lo, hi, xlo, xhi = token.bounds()
    low_bad = lo is not None and (value <= lo if xlo else value < lo)
    high_bad = hi is not None and (value >= hi if xhi else value > hi)
    if low_bad or high_bad:
        left = "" if lo is None else f"{'>' if xlo else '>='} {lo}"
        right = "" if hi is None else f"{'<' if xhi else '<='} {hi}"
        rule = " and ".join(x for x in (left, right) if x)
        raise TemplateError("range", path, f"{value} is out of range", f"send a number {rule}")
    step_text = token.modifier("multiple_of")
    if step_text is not None:
        if not _is_multiple(value, step_text):
            raise TemplateError(
                "range", path, f"{value} is not a multiple of {step_text}", "round it to the step"
            )
    fmt = token.modifier("format")
    limit = _INT_FORMATS.get(fmt or "")
    if limit is not None and isinstance(value, int) and not -limit <= value < limit:
        raise TemplateError(
            "range", path, f"{value} does not fit {fmt}", f"send an integer within {fmt}"
        )


def _is_multiple(value: int | float, step_text: str) -> bool:
    """Exact decimal arithmetic: 0.07 is a multiple of 0.01, and 10**400 of 0.5."""
    try:
        step = Fraction(step_text)
    except (ValueError, ZeroDivisionError):
        return True  # a step the token cannot state is not enforced here
    if step <= 0:
        return True
    if isinstance(value, int):
        return (Fraction(value) / step).denominator == 1
    # A float is a multiple when its decimal text is (0.07 of 0.01) or its exact binary value
    # is: at large magnitudes the shortest text drops digits (562949953421312.25 prints as
    # 562949953421312.2).
    return any((Fraction(x) / step).denominator == 1 for x in (repr(value), value))


def check_text(text: str, path: str) -> None:
    """Reject text UTF-8 cannot encode: a lone surrogate, which JSON text can spell."""
    if _SURROGATE.search(text):
        raise TemplateError(
            "encoding",
            path,
            "the text holds a lone UTF-16 surrogate (U+D800-U+DFFF), which UTF-8 cannot carry",
            "send real characters (a surrogate pair must be written as the character it forms)",
        )


def check_integer(value: int, path: str) -> None:
    """Reject an integer too wide to be written as decimal text."""
    if value.bit_length() > MAX_INTEGER_BITS:
        raise TemplateError(
            "range",
            path,
            f"the integer has about {int(value.bit_length() * 0.30103)} digits",
            f"send an integer of at most {int(MAX_INTEGER_BITS * 0.30103)} digits",
        )


def _text(token: Token, value: str, path: str) -> None:
    check_text(value, path)
    low, high = token.modifier("min_length"), token.modifier("max_length")
    if low is not None and len(value) < int(low):
        raise TemplateError(
            "length", path, f"text is {len(value)} characters", f"send at least {low} characters"
        )
    if high is not None and len(value) > int(high):
        raise TemplateError(
            "length", path, f"text is {len(value)} characters", f"send at most {high} characters"
        )
    pattern = token.modifier("pattern")
    compiled = _compiled(pattern) if pattern is not None else None
    if compiled is not None and not compiled.search(value):
        raise TemplateError(
            "pattern", path, f"{_show(value)} does not match {pattern}", "send text that matches"
        )
    fmt = token.modifier("format")
    checker = _FORMATS.get(fmt or "")
    if checker is not None and not checker.match(value):
        raise TemplateError(
            "format", path, f"{_show(value)} is not a valid {fmt}", f"send a {fmt} value"
        )


@functools.lru_cache(maxsize=512)
def _compiled(pattern: str) -> re.Pattern[str] | None:
    """Compile an ECMA-262 pattern with Python's engine; None when it cannot (not enforced)."""
    try:
        return re.compile(pattern)
    except re.error:
        return None


def check_json(value: Any, path: str, depth: int = 0) -> None:
    """Reject anything that is not plain JSON (or nests deeper than the limit)."""
    if depth > MAX_NESTING:
        raise TemplateError(
            "limit", path, f"value nested deeper than {MAX_NESTING} levels", "flatten the value"
        )
    if isinstance(value, str):
        check_text(value, path)
    elif isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TemplateError(
                    "type", path, f"object key {key!r} is not a string", "use string keys"
                )
            check_text(key, child_path(path, key))
            check_json(item, child_path(path, key), depth + 1)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            check_json(item, child_path(path, i), depth + 1)
    elif isinstance(value, int) and not isinstance(value, bool):
        check_integer(value, path)
    elif isinstance(value, float) and not math.isfinite(value):
        raise TemplateError("type", path, f"{value} is not a JSON number", "send a finite number")
    elif value is not None and not isinstance(value, str | int | float | bool):
        raise TemplateError(
            "type", path, f"{type(value).__name__} is not a JSON value", "send JSON data only"
        )


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
