"""A standalone JSON Schema (with `$schema`) for validating payloads with `jsonschema`.

OpenAPI 3.0 and Swagger 2.0 write "may be null" as `nullable`/`x-nullable`, which JSON Schema
does not know: they become `"type": [t, "null"]`. The document's component/definition maps are
carried along so local `$ref`s still resolve.
"""

from collections.abc import Mapping
from typing import Any

from compiler.imprint.errors import TemplateError
from compiler.imprint.limits import MAX_DOCUMENT_NESTING
from compiler.imprint.refs import OAS2, OAS30, OAS31, dialect_of

DRAFT4 = "http://json-schema.org/draft-04/schema#"
DRAFT2020 = "https://json-schema.org/draft/2020-12/schema"
_CARRIED = ("components", "definitions", "$defs")


def json_schema_for(
    schema: dict[str, Any], *, document: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """Return `schema` as a JSON Schema in the document's draft, ready for `jsonschema`.

    Args:
        schema: a schema from the document (or standalone).
        document: the OpenAPI/Swagger document it belongs to.

    Returns:
        draft-04 for Swagger 2.0 and OpenAPI 3.0, the document's `jsonSchemaDialect` or
        2020-12 for OpenAPI 3.1, and the schema's own `$schema` (default 2020-12) otherwise.
    """
    dialect = dialect_of(document) if document is not None else dialect_of({})
    flag = {OAS30: "nullable", OAS2: "x-nullable"}.get(dialect)
    out = _translate(schema, flag, 0)
    if not isinstance(out, dict):
        raise TemplateError("schema", "#", "a schema must be a JSON object", "pass a schema object")
    if document is not None:
        for key in _CARRIED:
            if key in document and key not in out:
                out[key] = _translate(document[key], flag, 0)
    if dialect in (OAS2, OAS30):
        out["$schema"] = DRAFT4
    elif dialect == OAS31:
        chosen = document.get("jsonSchemaDialect") if document is not None else None
        out["$schema"] = chosen if isinstance(chosen, str) else DRAFT2020
    else:
        out.setdefault("$schema", DRAFT2020)
    return out


def _translate(node: Any, flag: str | None, depth: int) -> Any:
    if depth > MAX_DOCUMENT_NESTING:
        raise TemplateError(
            "limit", "#", f"nested deeper than {MAX_DOCUMENT_NESTING}", "flatten the document"
        )
    if isinstance(node, list):
        return [_translate(v, flag, depth + 1) for v in node]
    if not isinstance(node, dict):
        return node
    out = {k: _translate(v, flag, depth + 1) for k, v in node.items()}
    if flag is not None and out.get(flag) is True and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    return out
