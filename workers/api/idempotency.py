"""`Idempotency-Key` on every POST that starts or decides something.

The same key with the same request (method, path, body) returns the first answer, marked
`Idempotent-Replayed: true`, and does nothing again; the same key with another request is 422;
a request that failed released its key (it changed nothing), so a corrected retry may reuse it.
"""

import asyncio
import hashlib
import re
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import JSONResponse
from pydantic import BaseModel

from compiler.hashing import canonical_json
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.api.context import ApiContext
from workers.services.access import Principal

__all__ = ["IdempotencyKey", "once"]

_KEY = re.compile(r"[\x21-\x7e]{1,200}")  # visible ASCII, no spaces

IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        description="Any unique string (a UUID): a retry with the same key and body gets the "
        "first answer; the same key with another body is 422.",
    ),
]


async def once(
    ctx: ApiContext,
    who: Principal,
    request: Request,
    key: str | None,
    payload: BaseModel | dict[str, Any],
    act: Callable[[], Awaitable[tuple[int, BaseModel]]],
) -> JSONResponse:
    """Answer with `act`'s (status, body), at most once per (tenant, key, request)."""
    if key is None:
        status, body = await act()
        return JSONResponse(body.model_dump(mode="json"), status_code=status)
    if not _KEY.fullmatch(key):
        raise ForgeError(
            "header Idempotency-Key must be 1 to 200 visible ASCII characters",
            code=ErrorCode.REQUEST_INVALID,
        )
    digest = hashlib.sha256(
        f"{request.method} {request.url.path}\n".encode() + _canonical(payload)
    ).hexdigest()
    store = ctx.idempotency
    stored = await asyncio.to_thread(store.begin, who.tenant, key, "sha256:" + digest)
    if stored is not None:
        return JSONResponse(
            stored.body, status_code=stored.status, headers={"Idempotent-Replayed": "true"}
        )
    try:
        status, body = await act()
    except BaseException:
        await asyncio.to_thread(store.release, who.tenant, key)
        raise
    dumped = body.model_dump(mode="json")
    await asyncio.to_thread(store.finish, who.tenant, key, status, dumped)
    return JSONResponse(dumped, status_code=status)


def _canonical(payload: BaseModel | dict[str, Any]) -> bytes:
    """The body as RFC 8785 JSON, which a request's hash is taken over.

    A body JSON cannot carry canonically (an integer of 2**53 or more in a plan, a lone
    surrogate, NaN) is the caller's to fix: 422 naming it, never a failure of the server.
    """
    try:
        return canonical_json(payload)
    except ValueError as exc:
        raise ForgeError(
            f"the body cannot be read as canonical JSON to key it by Idempotency-Key: {exc}",
            code=ErrorCode.REQUEST_INVALID,
            hint="send integers beyond 2**53 - 1 as strings, and text as valid Unicode",
        ) from None
