"""Canonical JSON (RFC 8785) and the sha256 digests every Forge hash is made of."""

import hashlib
import re
from typing import Any

import orjson
import rfc8785
from pydantic import BaseModel

# orjson with sorted keys writes RFC 8785 text for every JSON value but two kinds, found in its
# output: a float (orjson writes 1.0 and 1.2345678901234568e+20 where RFC 8785 writes 1 and
# 123456789012345680000, and NaN as null where RFC 8785 refuses it: in compact JSON a number
# starts right after '[', ':' or ',', and a finite float shows '.', 'e' or 'E' after its first
# digits), and a character beyond U+FFFF (a 4-byte UTF-8 sequence), where orjson's code-point
# key order and RFC 8785's UTF-16 order can disagree. Text that only looks like a float
# (",1.5") or a null costs a walk by type that settles it.
_FLOAT = re.compile(rb"[\[:,]-?\d+[.eE]")
_ASTRAL = re.compile(rb"[\xf0-\xf4]")
_NOT_FLOATS = frozenset({str, int, bool, type(None)})  # leaf types orjson writes as RFC 8785
# Integers beyond 53 bits raise (RFC 8785 has no form for them); datetimes, dataclasses and
# subclasses of JSON types are not JSON values: they raise too, and `rfc8785` judges them.
_ORJSON = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_STRICT_INTEGER
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value or a pydantic model.

    The `rfc8785` package is exact but pure Python: about 40 times slower than orjson (Rust),
    whose compact output with sorted keys is RFC 8785 for strings, safe integers, booleans and
    null (the same minimal escapes, raw UTF-8, keys in code-point order, which is UTF-16 order
    within the Basic Multilingual Plane). So orjson writes the value, and the value goes to
    `rfc8785` instead when orjson refuses it, when its output holds a character beyond U+FFFF,
    or when it holds a float (seen in the text, or, when the text has a null, by a walk by
    type). Property tests hold the result equal to `rfc8785.dumps`.

    An integer of magnitude 2**53 or more has no RFC 8785 form: it raises a ValueError that
    names it and says to send such integers as strings. Other values JSON cannot carry (NaN,
    infinities, non-string keys, other types) raise `rfc8785`'s own errors.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    if isinstance(value, float):  # a lone number: no '[', ':' or ',' before it for _FLOAT
        return _exact(value)
    try:
        out = orjson.dumps(value, option=_ORJSON)
    except TypeError:  # orjson.JSONEncodeError
        return _exact(value)  # raises the package's precise error for bad values
    if not out.isascii() and _ASTRAL.search(out):
        return _exact(value)
    # orjson writes NaN and the infinities as null, where RFC 8785 refuses them
    if (b"null" in out or _FLOAT.search(out)) and _has_float(value):
        return _exact(value)
    return out


def _exact(value: Any) -> bytes:
    """`rfc8785.dumps`, with an integer it cannot encode reported as what to do about it."""
    try:
        return rfc8785.dumps(value)
    except ValueError:  # IntegerDomainError, or str() refusing a gigantic integer on the way
        big = first_unsafe_int(value)
        if big is None:
            raise
        raise ValueError(unsafe_integer_message(big)) from None


_SAFE_INT = 2**53


def unsafe_integer_message(n: int) -> str:
    """Why an integer of magnitude 2**53 or more cannot be hashed, and what to send instead."""
    shown = str(n) if n.bit_length() <= 256 else f"of {n.bit_length()} bits"
    return (
        f"integer {shown} cannot be canonicalized: RFC 8785 JSON holds integers only up to "
        "2**53 - 1 in magnitude (what an IEEE 754 double represents exactly); send such "
        "integers as strings"
    )


def first_unsafe_int(value: Any) -> int | None:
    """The first integer in a JSON value that RFC 8785 cannot hold (2**53 or more in magnitude)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list | tuple):
            stack.extend(item)
        elif isinstance(item, int) and not isinstance(item, bool):
            if not -_SAFE_INT < item < _SAFE_INT:
                return int(item)
    return None


def _has_float(value: Any) -> bool:
    """True when a float is anywhere in `value` (settles by type what the text scan suspects).

    A type outside JSON's own (a float subclass, say) counts as a float: the exact encoder then
    judges the value. The same walk as first_unsafe_int, written out again because this one is
    on the hot path (a generator shared by both measured 1.4-4x slower) and matches exact types.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind not in _NOT_FLOATS:
            return True
    return False


def sha256_of(value: Any) -> str:
    """Return `sha256:<hex>` over the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Return `sha256:<hex>` over UTF-8 text (frozen code, adapter sources)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
