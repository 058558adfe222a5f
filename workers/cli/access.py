"""`forge tenants create|list`, `forge keys create|list|revoke`: who may use the HTTP API.

(`forge tenants update|show`, a tenant's quotas and input locations: workers/cli/tenant_settings.)

The CLI acts on this machine as each tenant's administrator (workers/access.local), through
the same authorization check the API's keys pass.
"""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING, Annotated

import typer
from rich.markup import escape
from rich.table import Table

from schemas.error_codes import ErrorCode
from schemas.scope_ids import DEFAULT_TENANT
from workers.cli.common import (
    TenantOption,
    VerbGroup,
    fail,
    one_line_errors,
    out,
    scope_of,
    settings,
)

if TYPE_CHECKING:
    from activities.store.access import AccessStore

__all__ = ["keys_app", "tenants_app"]

tenants_app = typer.Typer(
    cls=VerbGroup, help="Tenants: the isolation boundary of runs, capsules and keys."
)
keys_app = typer.Typer(
    cls=VerbGroup, help="API keys of a tenant: shown once, stored hashed, revocable."
)


def _store() -> AccessStore:
    from activities.store.access import open_access_store

    return open_access_store(settings().database_url)


@tenants_app.command("create")
@one_line_errors
def tenants_create(tenant: Annotated[str, typer.Argument(metavar="TENANT")]) -> None:
    """Create a tenant (an id of lower-case letters, digits, '_', '-', '.')."""
    with _store() as store:
        created = store.create_tenant(tenant, created_by="cli")
    out.print(f"[green]✓[/] tenant [bold]{created.tenant_id}[/] created")
    out.print(f"  give it a key: forge keys create --tenant {created.tenant_id} --role admin")


@tenants_app.command("list")
@one_line_errors
def tenants_list() -> None:
    """Every tenant, with how many live keys it has."""
    with _store() as store:
        tenants = store.tenants()
        table = Table(title=f"{len(tenants)} tenant(s)", title_justify="left")
        for col in ("tenant", "created", "live keys"):
            table.add_column(col)
        now = datetime.now().astimezone()
        for t in tenants:
            live = [
                k
                for k in store.keys(t.tenant_id)
                if k.revoked_at is None and (k.expires_at is None or k.expires_at > now)
            ]
            table.add_row(t.tenant_id, f"{t.created_at:%Y-%m-%d %H:%M}", str(len(live)))
    out.print(table)


RoleOption = Annotated[str, typer.Option("--role", help="admin, operator, approver or viewer")]


@keys_app.command("create")
@one_line_errors
def keys_create(
    role: RoleOption,
    name: Annotated[
        str, typer.Option("--name", help="Who or what uses the key (its events' actor).")
    ] = "api",
    gate_roles: Annotated[
        list[str] | None,
        typer.Option("--gate-role", metavar="ROLE", help="A gate approver role it may decide as."),
    ] = None,
    expires: Annotated[
        datetime | None, typer.Option("--expires", help="When it stops working (UTC).")
    ] = None,
    human: Annotated[bool, typer.Option("--human", help="The key is a person's.")] = False,
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Create a key; its token is printed this once (only its sha256 is stored)."""
    from schemas.access import ROLES
    from schemas.scope import Actor
    from workers.services.access import authorize, local

    scope = scope_of(tenant)
    authorize(local(scope.tenant), "keys.write")
    if role not in ROLES:
        fail(
            f"--role {role!r}: use one of {', '.join(reversed(ROLES))}",
            code=ErrorCode.USAGE_INVALID,
        )
    _check_key_request(role, name, gate_roles or [], expires)
    kind = "human" if human else "system"
    actor = Actor(id=name, name=name, role=role, kind=kind)
    with _store() as store:
        issued = store.create_key(
            scope.tenant,
            role,
            actor,
            gate_roles=gate_roles or (),
            expires_at=expires.astimezone() if expires else None,
        )
    key = issued.key
    out.print(f"[green]✓[/] key [bold]{key.prefix}[/] · tenant {key.tenant_id} · role {key.role}")
    out.print(f"  token (shown once; store it now): {issued.token}", soft_wrap=True)


@keys_app.command("list")
@one_line_errors
def keys_list(tenant: TenantOption = DEFAULT_TENANT) -> None:
    """The tenant's keys by prefix: role, actor, gate roles, state. Never a token."""
    from workers.services.access import authorize, local

    scope = scope_of(tenant)
    authorize(local(scope.tenant), "keys.read")
    with _store() as store:
        store.tenant(scope.tenant)
        keys = store.keys(scope.tenant)
    table = Table(title=f"{len(keys)} key(s) of {scope.tenant}", title_justify="left")
    for col in ("key", "role", "actor", "gate roles", "created", "state"):
        table.add_column(col)
    now = datetime.now().astimezone()
    for k in keys:
        state = (
            f"revoked {k.revoked_at:%Y-%m-%d %H:%M}"
            if k.revoked_at
            else f"expired {k.expires_at:%Y-%m-%d %H:%M}"
            if k.expires_at and k.expires_at <= now
            else "live"
        )
        table.add_row(
            k.prefix,
            k.role,
            escape(k.actor.id),
            ", ".join(k.gate_roles) or "-",
            f"{k.created_at:%Y-%m-%d %H:%M}",
            state,
        )
    out.print(table)


@keys_app.command("revoke")
@one_line_errors
def keys_revoke(
    key: Annotated[str, typer.Argument(metavar="KEY", help="fk_<id> as `forge keys list` shows")],
    tenant: TenantOption = DEFAULT_TENANT,
) -> None:
    """Revoke a key at once: every request after this one is refused."""
    from workers.services.access import authorize, local

    scope = scope_of(tenant)
    authorize(local(scope.tenant), "keys.write")
    with _store() as store:
        revoked = store.revoke(scope.tenant, key)
    out.print(
        f"[green]✓[/] key {revoked.prefix} revoked at {revoked.revoked_at:%Y-%m-%d %H:%M} UTC"
    )


_KEY_FLAGS = {"name": "--name", "gate_roles": "--gate-role", "expires_at": "--expires"}


def _check_key_request(
    role: str, name: str, gate_roles: list[str], expires: datetime | None
) -> None:
    """The checks of `POST /v1/keys` (schemas.api.KeyCreate), so both surfaces refuse alike.

    A blank or unprintable name or gate role, or an expiry in the past, is refused before
    anything is stored.
    """
    from pydantic import ValidationError

    from schemas.api import KeyCreate

    when = expires.astimezone().isoformat() if expires else None
    try:
        KeyCreate.model_validate(
            {"role": role, "name": name, "gate_roles": gate_roles, "expires_at": when}
        )
    except ValidationError as exc:
        first = exc.errors()[0]
        where = first["loc"]
        flag = _KEY_FLAGS.get(str(where[0]), str(where[0]))
        given = gate_roles[int(where[1])] if len(where) > 1 and where[0] == "gate_roles" else None
        shown = f"{flag} {given!r}" if given is not None else flag
        fail(f"{shown}: {first['msg'].removeprefix('Value error, ')}", code=ErrorCode.USAGE_INVALID)
