"""Every request is authenticated by its bearer key, then authorized for what it does."""

from collections.abc import Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from schemas.access import Permission
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.api.context import ApiContext
from workers.services.access import Principal, authorize, of_key

__all__ = ["Ctx", "context", "principal", "requires"]

_bearer = HTTPBearer(auto_error=False, description="An API key: `forge keys create`")


def context(request: Request) -> ApiContext:
    ctx: ApiContext = request.app.state.forge
    return ctx


def principal(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Principal:
    """The key the request carries, live; 401 when there is none or it is not."""
    if credentials is None:
        raise ForgeError(
            "the request carries no API key: send `Authorization: Bearer fk_…`",
            code=ErrorCode.UNAUTHENTICATED,
        )
    return of_key(context(request).access.authenticate(credentials.credentials))


def requires(permission: Permission) -> Callable[..., Principal]:
    """A dependency: the request's principal, if its role holds `permission` (else 403)."""

    def check(who: Annotated[Principal, Depends(principal)]) -> Principal:
        authorize(who, permission)
        return who

    check.__name__ = f"requires_{permission.replace('.', '_')}"
    return check


Ctx = Annotated[ApiContext, Depends(context)]
