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
        return _exact(value)  # raises the package's precise error for bad values
    if not text.isascii() and _ASTRAL.search(text):
        return _exact(value)
    if (text[0] in "-0123456789" or _NEEDS_FULL.search(text)) and not _safe_numbers(value):
        return _exact(value)
    return text.encode("utf-8")


def _exact(value: Any) -> bytes:
    try:
        return rfc8785.dumps(value)
    except rfc8785.IntegerDomainError as exc:
        raise ValueError(
            f"{exc}: RFC 8785 hashes integers only up to 2**53 in magnitude; send larger "
            "integers as strings"
        ) from None


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


DIGEST_MIN_LEN = 64


def digested(value: Any, *, min_len: int = DIGEST_MIN_LEN) -> Any:
    """`value` with every string of at least `min_len` characters replaced by its digest.

    The digest is `"sha256:" + hex(sha256(utf-8 bytes))`. An integer outside RFC 8785's safe
    range (|n| >= 2**53, e.g. a JSON Schema `maximum`) becomes its decimal string, which the
    canonical encoder accepts. Used by `sha256_of_digested`.
    """
    return _reduce(value, min_len, [False])


def _reduce(value: Any, min_len: int, floats: list[bool]) -> Any:
    """digested(); sets floats[0] when a float was seen (the caller then needs the exact path)."""
    sha = hashlib.sha256
    kind = type(value)
    if kind is str:
        return value if len(value) < min_len else "sha256:" + sha(value.encode()).hexdigest()
    if kind is dict:
        out = {}
        for k, v in value.items():
            t = type(v)
            if t is str:
                out[k] = v if len(v) < min_len else "sha256:" + sha(v.encode()).hexdigest()
            elif t is bool or v is None or (t is int and -_SAFE_INT < v < _SAFE_INT):
                out[k] = v
            else:
                out[k] = _reduce(v, min_len, floats)
        return out
    if kind is list or kind is tuple:
        items = []
        for v in value:
            t = type(v)
            if t is str:
                items.append(v if len(v) < min_len else "sha256:" + sha(v.encode()).hexdigest())
            elif t is bool or v is None:
                items.append(v)
            else:
                items.append(_reduce(v, min_len, floats))
        return items
    if kind is int and not -_SAFE_INT < value < _SAFE_INT:
        return str(value)
    if kind is float:
        floats[0] = True
    return value


def sha256_of_digested(value: Any, *, min_len: int = DIGEST_MIN_LEN) -> str:
    """`sha256:<hex>` over the RFC 8785 canonical JSON of `digested(value)` (a digest tree).

    Long strings (prompt text, evidence summaries) are replaced by their sha256 before the
    canonical encoding, so a large value hashes at the speed of hashlib instead of the JSON
    encoder. The rule is reproducible in any language (replace every string of `min_len` or more
    characters by "sha256:" + its UTF-8 sha256 in hex, then RFC 8785) and as collision-resistant
    as hashing the whole text: a change in any string changes its digest.
    """
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    floats = [False]
    tree = _reduce(value, min_len, floats)
    if floats[0]:
        return sha256_of(tree)
    # Only safe integers and strings (digests are ASCII): the C encoder with sorted keys is
    # RFC 8785 here unless a short string holds astral characters (canonical_json's rule).
    text = json.dumps(tree, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    if not text.isascii() and _ASTRAL.search(text):
        return sha256_of(tree)
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
