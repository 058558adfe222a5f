"""A request body must be of the media type its operation takes, or it is 415.

A body sent with another Content-Type
than the operation declares (JSON, or multipart/form-data for a file) is 415, before a byte of
it is read; FastAPI would otherwise read a text/plain body as bytes and answer 422 about its
fields. The answer is problem+json, as every error (workers/api/problems.py).
"""

from email.message import Message

from fastapi import FastAPI, Request
from fastapi import params as fastapi_params
from fastapi.routing import APIRoute, iter_route_contexts
from starlette.routing import Match
from starlette.types import ASGIApp, Receive, Scope, Send

from schemas.error_codes import ErrorCode
from workers.api.problems import problem

__all__ = ["MediaTypes"]

_JSON = "application/json"
_FORM = "multipart/form-data"
_WITH_BODY = frozenset({"POST", "PUT", "PATCH"})


def _declared(route: APIRoute) -> str | None:
    """The media type the route's body is read as, or None when it takes no body."""
    if route.body_field is None:
        return None
    return _FORM if isinstance(route.body_field.field_info, fastapi_params.Form) else _JSON


def _accepts(declared: str, content_type: str | None) -> bool:
    if not content_type:
        return False
    message = Message()
    message["content-type"] = content_type
    given = message.get_content_type()  # lower case, parameters dropped; text/plain if unreadable
    if declared == _JSON:
        return given == _JSON or (given.startswith("application/") and given.endswith("+json"))
    return given == declared


def _has_body(scope: Scope) -> bool:
    for name, value in scope.get("headers", []):
        if name == b"transfer-encoding" or (name == b"content-length" and value not in (b"0",)):
            return True
    return False


class MediaTypes:
    """Refuse with 415 a body whose Content-Type is not the one its operation declares."""

    def __init__(self, app: ASGIApp, api: FastAPI) -> None:
        self.app, self.api = app, api

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] in _WITH_BODY and _has_body(scope):
            declared = self._declared(scope)
            if declared is not None:
                request = Request(scope)
                given = request.headers.get("content-type")
                if not _accepts(declared, given):
                    answer = problem(
                        request,
                        415,
                        ErrorCode.REQUEST_INVALID,
                        f"the body is {given or 'of no stated type'}; this operation takes "
                        f"{declared}",
                        hint=f"send the body as {declared} with a Content-Type header saying so",
                        headers={"Accept-Post": declared} if scope["method"] == "POST" else None,
                    )
                    await answer(scope, receive, send)
                    return
        await self.app(scope, receive, send)

    def _declared(self, scope: Scope) -> str | None:
        for context in iter_route_contexts(self.api.routes):  # into included routers too
            route = context.original_route
            if isinstance(route, APIRoute) and route.matches(scope)[0] == Match.FULL:
                return _declared(route)
        return None
