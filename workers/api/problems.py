"""RFC 9457 problem details: every error the API answers, naming what and where, never a secret.

A ForgeError becomes its catalogue code with the HTTP status below; a body or parameter that
does not validate becomes REQUEST_INVALID listing each field; anything else is a 500 that says
only that it happened (the log has the rest). Every text goes through the guard's masking
first (compiler/ladder/secrets/mask.py), so a submitted secret is never echoed.
"""

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from fastapi.routing import iter_route_contexts
from pydantic import Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from activities import masked_output
from compiler.errors import CompilerError
from compiler.ladder.secrets.mask import mask_text
from schemas.base import FrozenModel
from schemas.error_catalogue import CATALOGUE
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.api.limits import TooLarge

__all__ = ["PROBLEM", "FieldProblem", "Problem", "install", "problem_responses", "status_of"]

PROBLEM = "application/problem+json"
log = logging.getLogger(__name__)

_STATUS: dict[ErrorCode, int] = {
    ErrorCode.UNAUTHENTICATED: 401,
    ErrorCode.FORBIDDEN: 403,
    ErrorCode.NOT_FOUND: 404,
    ErrorCode.CAPSULE_NOT_FOUND: 404,
    ErrorCode.SCHEDULE_NOT_FOUND: 404,
    ErrorCode.ARTIFACT_NOT_FOUND: 404,
    ErrorCode.DECISION_REFUSED: 409,
    ErrorCode.RUN_ENDED: 409,
    ErrorCode.WORKER_UNAVAILABLE: 503,
    ErrorCode.IDEMPOTENCY_IN_PROGRESS: 409,
    ErrorCode.ARTIFACT_TOO_LARGE: 413,
    ErrorCode.REQUEST_TOO_LARGE: 413,
    ErrorCode.QUOTA_EXCEEDED: 429,
    ErrorCode.STORE_CONCURRENCY: 409,
    ErrorCode.SCHEMA_NOT_MIGRATED: 503,
    ErrorCode.STORE_ERROR: 503,
}
# Areas whose refusals are about what the caller sent: 422 unless the table says otherwise.
_CALLER = frozenset({"plan", "recipe", "capsule", "access", "context", "tool"})


class FieldProblem(FrozenModel):
    """One field of the request that is wrong."""

    field: str = Field(description="where: body.inputs.x, query.limit, header.Idempotency-Key")
    message: str


class Problem(FrozenModel):
    """RFC 9457 problem details, with Forge's error code and what to do."""

    type: str = Field(description="urn:forge:error:<CODE>")
    title: str
    status: int
    detail: str
    instance: str | None = None
    code: str
    hint: str
    errors: list[FieldProblem] = Field(default_factory=list)


def status_of(exc: ForgeError) -> int:
    """The HTTP status a ForgeError answers with."""
    if exc.code in _STATUS:
        return _STATUS[exc.code]
    entry = CATALOGUE[exc.code]
    if entry.category in _CALLER and not entry.retryable:
        return 422
    return 503 if exc.retryable else 500


def _masked(text: str, request: Request) -> str:
    new, found = mask_text(text)
    masked_output.note("api", f"forge api {request.method} {request.url.path}", found)
    return new


def problem(
    request: Request,
    status: int,
    code: ErrorCode,
    detail: str,
    *,
    hint: str | None = None,
    errors: list[FieldProblem] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    """The problem+json response for `code`, its texts masked."""
    entry = CATALOGUE[code]
    body = Problem(
        type=f"urn:forge:error:{code.value}",
        title=entry.meaning,
        status=status,
        detail=_masked(detail, request),
        instance=request.url.path,
        code=code.value,
        hint=_masked(hint if hint is not None else entry.hint, request),
        errors=[
            FieldProblem(field=e.field, message=_masked(e.message, request)) for e in errors or []
        ],
    )
    return JSONResponse(
        body.model_dump(mode="json"), status_code=status, media_type=PROBLEM, headers=headers
    )


def problem_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """OpenAPI: the problem+json answers a route may give (so generated clients parse them)."""
    content = {PROBLEM: {"schema": {"$ref": "#/components/schemas/Problem"}}}
    return {s: {"model": Problem, "content": content} for s in statuses}


def install(app: FastAPI) -> None:
    """Answer every error of `app` as problem+json."""

    @app.exception_handler(ForgeError)
    async def forge_error(request: Request, exc: ForgeError) -> JSONResponse:
        where = f" ({exc.where})" if exc.where else ""
        status = status_of(exc)
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        retry_after = getattr(exc, "retry_after_s", None)  # a quota, no worker: when to retry
        if isinstance(retry_after, int):
            headers = {"Retry-After": str(retry_after)}
        # Shared code words its errors for the CLI; the API names its own fields instead.
        message, hint = exc.worded("api")
        named = exc.spelled[0].names if exc.spelled else ()
        errors = [FieldProblem(field=n.field, message=message) for n in named]
        return problem(
            request, status, exc.code, message + where, hint=hint, headers=headers, errors=errors
        )

    @app.exception_handler(CompilerError)
    async def rejected(request: Request, exc: CompilerError) -> JSONResponse:
        errors = [
            FieldProblem(
                field=".".join(["body", "plan", *(x for x in (d.step_key, d.slot, d.field) if x)]),
                message=f"{d.code}: {d.message} — {d.hint}",
            )
            for d in exc.diagnostics
        ]
        return problem(
            request,
            422,
            exc.code,
            f"the plan was rejected with {len(errors)} problem(s); nothing was started",
            hint="fix every problem in `errors` and submit the plan again",
            errors=errors,
        )

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            FieldProblem(field=".".join(str(p) for p in e["loc"]) or "body", message=_message(e))
            for e in exc.errors()
        ]
        summary = "; ".join(f"{e.field}: {e.message}" for e in errors[:3])
        return problem(
            request,
            422,
            ErrorCode.REQUEST_INVALID,
            f"the request is invalid: {summary}",
            errors=errors,
        )

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {
            401: ErrorCode.UNAUTHENTICATED,
            403: ErrorCode.FORBIDDEN,
            404: ErrorCode.NOT_FOUND,
            413: ErrorCode.ARTIFACT_TOO_LARGE,
        }
        told = exc.code if isinstance(exc, TooLarge) else None  # workers/api/limits.py
        headers = dict(exc.headers or {})
        if exc.status_code == 405:
            headers["Allow"] = _allowed(request)
        return problem(
            request,
            exc.status_code,
            told or code.get(exc.status_code, ErrorCode.REQUEST_INVALID),
            str(exc.detail),
            headers=headers or None,
        )

    @app.exception_handler(Exception)
    async def crashed(request: Request, exc: Exception) -> JSONResponse:
        log.exception("%s %s failed", request.method, request.url.path)
        return problem(
            request,
            500,
            ErrorCode.ERROR,
            "the server failed to answer this request (its log has the details)",
            hint="retry the request; report it if it fails again",
        )


def _allowed(request: Request) -> str:
    """A 405's `Allow`: the methods of every route on the request's path.

    Starlette names only those of the first route it tried (GET /v1/runs would not list POST).
    """
    methods: set[str] = set()
    for context in iter_route_contexts(request.app.routes):  # into included routers too
        route = context.original_route
        if route.matches(request.scope)[0] != Match.NONE:
            methods.update(getattr(route, "methods", None) or ())
    return ", ".join(sorted(methods))


def _message(error: Any) -> str:
    """A validation error's message, without the submitted value (it may be a secret)."""
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        return "unknown field: remove it (the schema is at /openapi.json)"
    if kind == "json_invalid":
        ctx = error.get("ctx") or {}
        return f"malformed JSON: {ctx.get('error', 'cannot be parsed')}"
    return str(error.get("msg", "invalid"))
