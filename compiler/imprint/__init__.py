"""Imprinting: JSON Schema -> self-describing template -> filled by a model -> payload.

The token grammar lives in `tokens`, the traversal in `build`, the inverse in `payload`,
OpenAPI operations in `openapi`, wire encodings in `encode`, the model-facing text in `render`.
"""

from compiler.imprint.auto import AutoByFormat, AutoValues
from compiler.imprint.dialect import json_schema_for
from compiler.imprint.encode import content_type_header, encode_body
from compiler.imprint.errors import TemplateError
from compiler.imprint.jsontext import parse_json
from compiler.imprint.openapi import (
    OperationTemplate,
    RequestBody,
    operation_parameters,
    operation_payload,
    operation_template,
    parameters_schema,
    request_body,
)
from compiler.imprint.payload import template_to_payload
from compiler.imprint.render import Header, render_template
from compiler.imprint.template import constraint_notes, schema_to_template
from compiler.imprint.tokens import (
    ONE_OF,
    REF_CIRCULAR,
    REF_MAX_DEPTH,
    Token,
    looks_like_token,
    parse_token,
)

__all__ = [
    "ONE_OF",
    "REF_CIRCULAR",
    "REF_MAX_DEPTH",
    "AutoByFormat",
    "AutoValues",
    "Header",
    "OperationTemplate",
    "RequestBody",
    "TemplateError",
    "Token",
    "constraint_notes",
    "content_type_header",
    "encode_body",
    "json_schema_for",
    "looks_like_token",
    "operation_parameters",
    "operation_payload",
    "operation_template",
    "parameters_schema",
    "parse_json",
    "parse_token",
    "render_template",
    "request_body",
    "schema_to_template",
    "template_to_payload",
]
