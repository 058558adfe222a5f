"""Swagger 2.0 request shapes: the body parameter, formData fields, and parameter schemas."""

from typing import Any

from compiler.imprint.errors import pointer_child
from compiler.imprint.refs import OAS2, dialect_of

# Keywords a Swagger 2.0 non-body parameter shares with a schema.
_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "enum",
    "default",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "uniqueItems",
    "multipleOf",
    "x-nullable",
)
_JSON_FIRST = ("application/json", "text/json")


def body_from_swagger(
    document: dict[str, Any], params: list[dict[str, Any]], op: dict[str, Any], where: str
) -> tuple[str, dict[str, Any], str] | None:
    """Return (media type, schema, pointer) of a Swagger 2.0 request body, or None.

    The body is the `in: body` parameter's schema, or else an object schema made of the
    `in: formData` parameters (multipart when a field is a file or only multipart is consumed).
    """
    consumes = op.get("consumes", document.get("consumes", []))
    consumes = [c for c in consumes if isinstance(c, str)] if isinstance(consumes, list) else []
    for param in params:
        if param.get("in") == "body":
            schema = param.get("schema", {})
            media = next((c for c in consumes if c.split(";")[0] in _JSON_FIRST), None)
            media = media or next((c for c in consumes if "json" in c), None)
            at = pointer_child(pointer_child(where, "parameters"), param["name"])
            return media or "application/json", schema, pointer_child(at, "schema")
    fields = [p for p in params if p.get("in") == "formData"]
    if not fields:
        return None
    has_file = any(p.get("type") == "file" for p in fields)
    multipart = has_file or (
        "multipart/form-data" in consumes and "application/x-www-form-urlencoded" not in consumes
    )
    media = "multipart/form-data" if multipart else "application/x-www-form-urlencoded"
    schema = {
        "type": "object",
        "properties": {p["name"]: parameter_schema(document, p) for p in fields},
        "required": [p["name"] for p in fields if p.get("required") is True],
    }
    return media, schema, pointer_child(where, "parameters")


def parameter_schema(document: dict[str, Any], param: dict[str, Any]) -> Any:
    """The schema of one non-body parameter in either dialect."""
    if dialect_of(document) != OAS2:
        if "schema" in param:
            return param["schema"]
        content = param.get("content")
        if isinstance(content, dict) and content:
            first = next(iter(content.values()))
            if isinstance(first, dict) and "schema" in first:
                return first["schema"]
        return {"type": "string"}
    schema = {k: param[k] for k in _SCHEMA_KEYS if k in param}
    if schema.get("type") == "file":
        schema = {**schema, "type": "string", "format": "binary"}
    return schema
