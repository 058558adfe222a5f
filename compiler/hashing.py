"""Canonical JSON (RFC 8785) and the sha256 digests every Forge hash is made of."""

import hashlib
from typing import Any

import rfc8785
from pydantic import BaseModel


def canonical_json(value: Any) -> bytes:
    """Return the RFC 8785 canonical encoding of a JSON value or a pydantic model."""
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json")
    return rfc8785.dumps(value)


def sha256_of(value: Any) -> str:
    """Return `sha256:<hex>` over the canonical JSON of `value`."""
    return "sha256:" + hashlib.sha256(canonical_json(value)).hexdigest()


def sha256_text(text: str) -> str:
    """Return `sha256:<hex>` over UTF-8 text (frozen code, adapter sources)."""
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
