"""A body larger than an upload may be is refused while it streams in, not after.

FastAPI reads a multipart body to the end before the handler runs; this ASGI middleware counts
the bytes of an upload's body as they arrive and stops at the limit (plus room for the
multipart framing) with 413, so an oversize upload never fills the disk. The handler checks
the file's own size exactly.
"""

from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

__all__ = ["FRAMING", "UploadLimit"]

FRAMING = 64 * 1024  # multipart boundaries and part headers around the file


class UploadLimit:
    """Refuse a POST to `path` whose body grows past `limit` + FRAMING bytes."""

    def __init__(self, app: ASGIApp, path: str, limit: int) -> None:
        self.app, self.path, self.limit = app, path, limit + FRAMING

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["path"] != self.path or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.limit:
            receive = _refusing(self.limit)
        else:
            receive = _counting(receive, self.limit)
        await self.app(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length" and value.isdigit():
            return int(value)
    return None


def _too_large(limit: int) -> HTTPException:
    return HTTPException(
        413, f"the upload is larger than {limit - FRAMING:,} bytes; nothing was stored"
    )


def _refusing(limit: int) -> Receive:
    async def receive() -> Message:
        raise _too_large(limit)

    return receive


def _counting(receive: Receive, limit: int) -> Receive:
    seen = 0

    async def counted() -> Any:
        nonlocal seen
        message = await receive()
        if message["type"] == "http.request":
            seen += len(message.get("body", b""))
            if seen > limit:
                raise _too_large(limit)
        return message

    return counted
