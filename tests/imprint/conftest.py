"""Shared helpers for the imprint tests: the OpenAPI documents, an AUTO provider, validation."""

from __future__ import annotations

import datetime
import json
import uuid
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema

from compiler.imprint import AutoByFormat, json_schema_for
from compiler.imprint.openapi import METHODS

DATA = Path(__file__).resolve().parents[1] / "data" / "openapi"
DOCUMENTS = sorted(p.name for p in DATA.glob("*.json"))

# Impure generators are fine here: tests are not compiler code.
AUTO = AutoByFormat(
    {
        "uuid": lambda: str(uuid.uuid4()),
        "date-time": lambda: datetime.datetime.now(datetime.UTC).isoformat(),
        "date": lambda: datetime.date.today().isoformat(),
        "string": lambda: "auto",
        "integer": lambda: 1,
        "number": lambda: 1.5,
        "boolean": lambda: True,
    }
)


@cache
def _raw(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def load(name: str) -> dict[str, Any]:
    """A fresh copy of one test document (tests may not share mutable state)."""
    return json.loads(_raw(name))


def operations(name: str) -> list[tuple[str, str]]:
    """Every (method, path) of a document, in document order."""
    doc = json.loads(_raw(name))
    return [(m, p) for p, item in doc["paths"].items() for m in METHODS if m in item]


def relaxed(node: Any) -> Any:
    """The same schema with every oneOf read as anyOf (see test_roundtrip for why)."""
    if isinstance(node, list):
        return [relaxed(v) for v in node]
    if isinstance(node, dict):
        return {("anyOf" if k == "oneOf" else k): relaxed(v) for k, v in node.items()}
    return node


def validator(schema: dict[str, Any], document: dict[str, Any] | None = None) -> Any:
    """A jsonschema validator in the document's draft, with format checking on."""
    full = json_schema_for(schema, document=document)
    cls = jsonschema.validators.validator_for(full)
    return cls(full, format_checker=cls.FORMAT_CHECKER)
