"""A body larger than a request may send is refused while it streams in, not after.

FastAPI reads a body to the end before the handler runs; this ASGI middleware counts the bytes
of every request's body as they arrive and stops at its route's limit with 413 problem+json, so
an oversize body is never buffered whole, parsed or stored. An upload (POST /v1/uploads) has its
own, larger limit (plus room for the multipart framing) and the handler checks the file's own
size exactly; every other route (JSON) has the body limit (FORGE_API_MAX_BODY_BYTES).
"""

from collections.abc import Callable, Mapping
from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.error_codes import ErrorCode

__all__ = ["FRAMING", "BodyLimit", "TooLarge"]

FRAMING = 64 * 1024  # multipart boundaries and part headers around the file
Refusal = Callable[[], Exception]


class TooLarge(HTTPException):
    """413 with its Forge code (FastAPI lets only an HTTPException out of a body read)."""

    def __init__(self, code: ErrorCode, detail: str) -> None:
        super().__init__(413, detail)
        self.code = code


class BodyLimit:
    """Refuse a body past `limit` bytes; `uploads` maps a POST path to its own file limit."""

    def __init__(self, app: ASGIApp, limit: int, uploads: Mapping[str, int]) -> None:
        self.app, self.limit, self.uploads = app, limit, dict(uploads)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        upload = self.uploads.get(scope["path"]) if scope["method"] == "POST" else None
        if upload is not None:
            limit, refusal = upload + FRAMING, _upload_too_large(upload)
        else:
            limit, refusal = self.limit, _body_too_large(self.limit)
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            receive = _refusing(refusal)
        else:
            receive = _counting(receive, limit, refusal)
        await self.app(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def _upload_too_large(limit: int) -> Refusal:
    return lambda: TooLarge(
        ErrorCode.ARTIFACT_TOO_LARGE,
        f"the upload is larger than {limit:,} bytes; nothing was stored",
    )


def _body_too_large(limit: int) -> Refusal:
    return lambda: TooLarge(
        ErrorCode.REQUEST_TOO_LARGE,
        f"the request body is larger than {limit:,} bytes; nothing was done: upload files "
        "(POST /v1/uploads) and name them as inputs, keep long material out of plans and "
        "objectives",
    )


def _refusing(refusal: Refusal) -> Receive:
    async def receive() -> Message:
        raise refusal()

    return receive


def _counting(receive: Receive, limit: int, refusal: Refusal) -> Receive:
    seen = 0

    async def counted() -> Any:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise refusal()
        return message

    return counted
