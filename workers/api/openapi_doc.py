"""The published /openapi.json: every status an operation can answer, as the server sends it.

FastAPI documents what routes declare, plus a 422 in its own shape (`HTTPValidationError`, as
application/json) that Forge never sends. Here every error answer becomes what
workers/api/problems.py really sends, `application/problem+json` with the Problem schema, and
each operation gains the errors every request of its kind can meet: 401 and 403 (every route
is authenticated and authorized), 422 for a parameter or body that does not validate, 400 for
a body that cannot be parsed, 415 for a body of another media type than the one declared, 500
and 503 (a failure, a store that cannot be reached). A multipart file is marked
`format: binary` (OpenAPI 3.0's spelling, which tools still read) besides 3.1's
`contentMediaType`.
"""

from http import HTTPStatus
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from workers.api.problems import PROBLEM, Problem

__all__ = ["install"]

_PROBLEM_REF = {"$ref": "#/components/schemas/Problem"}
_EVERY = (401, 403, 500, 503)
_WITH_INPUT = (422,)
_WITH_BODY = (400, 415, 422)
_WHY = {
    400: "The body cannot be parsed (not UTF-8, or a malformed multipart body)",
    415: "The body is not of the media type the operation takes (Content-Type)",
    422: "A parameter or the body does not validate; `errors` names each field",
    500: "The server failed; its log has the details",
    503: "A store or Temporal cannot be reached now; retry",
}


def install(app: FastAPI) -> None:
    """Publish `app`'s OpenAPI document with its errors as they are answered."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            document = get_openapi(
                title=app.title,
                version=app.version,
                summary=app.summary,
                routes=app.routes,
            )
            app.openapi_schema = published(document)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]  # FastAPI's documented override


def published(document: dict[str, Any]) -> dict[str, Any]:
    """`document` with every operation's error answers completed and made problem+json."""
    for ops in document.get("paths", {}).values():
        for op in ops.values():
            _complete(op)
    schemas = document.setdefault("components", {}).setdefault("schemas", {})
    if "Problem" not in schemas:  # every route declares one; an app without any still refers
        shown = Problem.model_json_schema(ref_template="#/components/schemas/{model}")
        schemas.update(shown.pop("$defs", {}))
        schemas["Problem"] = shown
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    for name, schema in schemas.items():
        if name.startswith("Body_"):
            _mark_files(schema)
    return document


def _complete(op: dict[str, Any]) -> None:
    responses: dict[str, Any] = op.setdefault("responses", {})
    statuses = set(_EVERY)
    if op.get("parameters"):
        statuses.update(_WITH_INPUT)
    if "requestBody" in op:
        statuses.update(_WITH_BODY)
    for code in statuses:
        responses.setdefault(str(code), {})
    for key, answer in responses.items():
        if key.isdigit() and int(key) >= 400:
            phrase = HTTPStatus(int(key)).phrase
            if answer.get("description") in (None, "", "Validation Error", phrase):
                answer["description"] = _WHY.get(int(key), phrase)
            answer["content"] = {PROBLEM: {"schema": _PROBLEM_REF}}
    op["responses"] = dict(sorted(responses.items()))


def _mark_files(schema: dict[str, Any]) -> None:
    for prop in schema.get("properties", {}).values():
        if prop.get("type") == "string" and "contentMediaType" in prop:
            prop["format"] = "binary"
