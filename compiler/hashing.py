"""Canonical JSON (RFC 8785) and the sha256 digests every Forge hash is made of."""

import hashlib
import json
import re
from typing import Any

import rfc8785
from pydantic import BaseModel

# In compact JSON a number starts right after '[', ':' or ','. A float then shows '.', 'e' or
# 'E' after its digits; an integer of 16+ digits may exceed 2**53. A string that merely looks
# like this (",1.5") only sends the value to the exact encoder: slower, never wrong.
_NEEDS_FULL = re.compile(r"[\[:,]-?\d+(?:[.eE]|\d{15})")
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value or a pydantic model.

    The `rfc8785` package is exact but pure Python. For values whose only numbers are safe
    integers (below 16 digits) and whose text stays in the Basic Multilingual Plane, RFC 8785
    output is exactly what the C `json` encoder writes with sorted keys and no whitespace
    (UTF-16 and code-point key order agree in the BMP; string escapes are the same). That is
    checked with two regex searches and everything else goes through `rfc8785`; a property test
    holds the two equal.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    try:
        text = json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError):
        return rfc8785.dumps(value)  # raises the package's precise error for bad values
    if not text.isascii() and _ASTRAL.search(text):
        return rfc8785.dumps(value)
    if (text[0] in "-0123456789" or _NEEDS_FULL.search(text)) and not _safe_numbers(value):
        return rfc8785.dumps(value)
    return text.encode("utf-8")


_SAFE_INT = 2**53


def _safe_numbers(value: Any) -> bool:
    """True when every number in `value` is an integer below 2**53 (no float anywhere).

    Run only when the text scan saw something number-like, which strings can look like too
    (a digest "sha256:1234e9..."): the walk settles it by type instead of by text.
    """
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            stack.extend(item.values())
        elif kind is list or kind is tuple:
            stack.extend(item)
        elif kind is float:
            return False
        elif kind is int and not -_SAFE_INT < item < _SAFE_INT:
            return False
    return True


def sha256_of(value: Any) -> str:
    """Return `sha256:<hex>` over the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Return `sha256:<hex>` over UTF-8 text (frozen code, adapter sources)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
