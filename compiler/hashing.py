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
    if text[0] in "-0123456789" or _NEEDS_FULL.search(text):
        return rfc8785.dumps(value)
    return text.encode("utf-8")


def sha256_of(value: Any) -> str:
    """Return `sha256:<hex>` over the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Return `sha256:<hex>` over UTF-8 text (frozen code, adapter sources)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
