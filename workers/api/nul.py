r"""Text with a NUL character is refused at the edge: 422, before a store sees it.

PostgreSQL's text and JSONB cannot hold U+0000 (SQLite can), so a run id, a name or a body
string carrying one reached the store and failed there as a 500, on PostgreSQL only. No name,
id or text of Forge's has a use for it: a path, a query or a JSON body that carries one (as
%00, or as the escape \u0000) is a REQUEST_INVALID naming where, on every database alike.
"""

import re
from urllib.parse import unquote_to_bytes

from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from schemas.error_codes import ErrorCode
from workers.api.limits import TooLarge
from workers.api.problems import FieldProblem, problem

__all__ = ["RefuseNul"]

# \u0000 as an escape: after an even number of backslashes (`\\u0000` is a backslash and text).
_ESCAPED_NUL = re.compile(rb"(?<!\\)(?:\\\\)*\\u0000")
_JSON_BODY = 1024 * 1024  # bodies read here to look; larger ones are left to the routes


class RefuseNul:
    """Answer 422 to a request whose path, query or JSON body carries U+0000."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        where = None
        if "\x00" in scope["path"]:
            where = "path"
        elif b"\x00" in unquote_to_bytes(scope.get("query_string", b"")):
            where = "query"
        elif _json(scope):
            try:
                body, receive = await _buffered(receive)
            except TooLarge as exc:  # BodyLimit, outside this one, stopped the body: its 413
                answer = problem(Request(scope), exc.status_code, exc.code, str(exc.detail))
                await answer(scope, receive, send)
                return
            if body is not None and _ESCAPED_NUL.search(body):
                where = "body"
        if where is None:
            await self.app(scope, receive, send)
            return
        answer = problem(
            Request(scope),
            422,
            ErrorCode.REQUEST_INVALID,
            f"the request's {where} carries a NUL character (U+0000), which no field may hold",
            errors=[FieldProblem(field=where, message="remove the NUL character (U+0000)")],
        )
        await answer(scope, receive, send)


def _json(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"content-type":
            kind = bytes(value).split(b";")[0].strip().lower()
            return kind == b"application/json" or kind.endswith(b"+json")
    return False


async def _buffered(receive: Receive) -> tuple[bytes | None, Receive]:
    """The body (None past _JSON_BODY bytes) and a receive that hands every message on again."""
    messages: list[Message] = []
    size, more = 0, True
    while more and size <= _JSON_BODY:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            break
        size += len(message.get("body", b""))
        more = message.get("more_body", False)
    body = b"".join(m.get("body", b"") for m in messages) if not more else None
    pending = list(messages)

    async def replay() -> Message:
        return pending.pop(0) if pending else await receive()

    return body, replay
