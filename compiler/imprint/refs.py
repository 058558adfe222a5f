"""Local `$ref` resolution (JSON pointers, alias chains) and the dialect of a document."""

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from compiler.imprint.errors import TemplateError
from compiler.imprint.limits import MAX_REF_CHAIN

OAS2 = "swagger-2.0"
OAS30 = "openapi-3.0"
OAS31 = "openapi-3.1"
JSON_SCHEMA = "json-schema"
# Keys that never change what a schema accepts; a `$ref` beside only these is a pure alias.
ANNOTATIONS = frozenset(
    {"description", "summary", "title", "example", "examples", "$comment", "deprecated", "xml"}
)
_PERCENT = re.compile(r"(?:%[0-9A-Fa-f]{2})+")


def dialect_of(document: Mapping[str, Any]) -> str:
    """Return the schema dialect a document's schemas are written in."""
    version = document.get("openapi")
    if isinstance(version, str):
        return OAS30 if version.startswith("3.0") else OAS31
    if document.get("swagger") == "2.0":
        return OAS2
    return JSON_SCHEMA


@dataclass(frozen=True, slots=True)
class Resolver:
    """Resolves local references against one root document."""

    root: Mapping[str, Any]
    dialect: str

    def resolve(self, ref: Any, where: str) -> tuple[str, Any]:
        """Follow `ref` (and any chain of pure-alias refs after it) to a schema.

        Args:
            ref: the `$ref` value.
            where: JSON pointer of the schema holding the `$ref`, for error messages.

        Returns:
            (pointer of the final target, the target schema).

        Raises:
            TemplateError: the reference is not a string, external, dangling or a pure cycle.
        """
        seen: list[str] = []
        target: Any = {"$ref": ref}
        while isinstance(target, dict) and "$ref" in target and _alias(target):
            ref = target["$ref"]
            if not isinstance(ref, str):
                raise TemplateError(
                    "ref", where, f"$ref must be a string, got {type(ref).__name__}", "fix the $ref"
                )
            if ref in seen:
                chain = " -> ".join([*seen, ref])
                raise TemplateError(
                    "ref",
                    where,
                    f"circular $ref chain {chain} never reaches a schema",
                    "point one of these references at a real schema",
                )
            if len(seen) >= MAX_REF_CHAIN:
                raise TemplateError(
                    "limit",
                    where,
                    f"$ref chain longer than {MAX_REF_CHAIN} hops",
                    "point the reference at the schema directly",
                )
            seen.append(ref)
            target = self.lookup(ref, where)
        return seen[-1], target

    def lookup(self, ref: str, where: str) -> Any:
        """Return the value a single local reference points at."""
        if not ref.startswith("#"):
            raise TemplateError(
                "ref",
                where,
                f"external $ref {ref!r} is not supported",
                "bundle the document into one file (e.g. `swagger-cli bundle`) and retry",
            )
        if ref != "#" and not ref.startswith("#/"):
            raise TemplateError(
                "ref",
                where,
                f"anchor $ref {ref!r} is not supported",
                "use a JSON pointer such as #/components/schemas/Name",
            )
        node: Any = self.root
        walked = "#"
        for raw in ref[2:].split("/") if ref != "#" else []:
            part = _unpercent(raw).replace("~1", "/").replace("~0", "~")
            node = _step(node, part, ref, walked, where)
            walked = f"{walked}/{raw}"
        return node


def _alias(schema: dict[str, Any]) -> bool:
    return all(k == "$ref" or k in ANNOTATIONS or k.startswith("x-") for k in schema)


def _step(node: Any, part: str, ref: str, walked: str, where: str) -> Any:
    if isinstance(node, dict) and part in node:
        return node[part]
    if isinstance(node, list) and part.isdigit() and int(part) < len(node):
        return node[int(part)]
    hint = "fix the reference, or pass the whole document as document= so it can resolve"
    if isinstance(node, dict):
        close = difflib.get_close_matches(part, [str(k) for k in node], n=1)
        if close:
            hint = f"did you mean {walked}/{close[0]}? fix the reference"
    raise TemplateError(
        "ref", where, f"$ref {ref!r} does not resolve: no {part!r} in {walked}", hint
    )


def _unpercent(text: str) -> str:
    """Decode %XX escapes (UTF-8) in a URI fragment.

    Hand-written because compiler/ may not import urllib (tests/test_layers.py bans the whole
    package, urllib.parse included), and fragments need nothing more than this.
    """

    def decode(match: re.Match[str]) -> str:
        raw = bytes.fromhex(match.group(0).replace("%", ""))
        return raw.decode("utf-8", errors="replace")

    return _PERCENT.sub(decode, text) if "%" in text else text
