"""Tenants and API keys (issue 19): a key is shown once, stored as the sha256 of its token.

A token reads `fk_<key_id>_<secret>`: `fk_<key_id>` names the key in lists and logs (the
prefix), the secret is 32 random bytes (url-safe base64). Only sha256(token) is stored, so a
copy of the database holds no usable key; a presented token is found by its key id and
compared in constant time. A revoked or expired key stays listed with when it stopped.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, bindparam, insert, select, text, update
from sqlalchemy.exc import IntegrityError

from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import api_keys, tenants
from activities.store.tenancy import scoped
from schemas.access import ApiKey, IssuedKey, Role, Tenant
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import SCOPE_ID_PATTERN, Actor

__all__ = [
    "AccessStore",
    "open_access_store",
    "token_key_id",
]

_TOKEN = re.compile(r"fk_([0-9a-f]{12})_[A-Za-z0-9_-]{43}")
_K = api_keys.c
_T = tenants.c
_KEY_PG = text("SELECT * FROM forge_api_key(:key_id)")
_TENANTS_PG = text("SELECT * FROM forge_tenants()")


def token_key_id(token: str) -> str | None:
    """The key id a token names, or None when it is not a Forge API key."""
    m = _TOKEN.fullmatch(token)
    return m[1] if m else None


def _digest(token: str) -> str:
    return "sha256:" + hashlib.sha256(token.encode()).hexdigest()


class AccessStore:
    """Tenants and their API keys."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> AccessStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    # tenants

    def create_tenant(self, tenant_id: str, created_by: str) -> Tenant:
        """Create a tenant; an id that is malformed or taken is refused."""
        try:
            tenant = Tenant(
                tenant_id=tenant_id, created_at=datetime.now(UTC), created_by=created_by
            )
        except ValidationError:
            raise ForgeError(
                f"tenant id {tenant_id!r} is not valid: it must match {SCOPE_ID_PATTERN} "
                "(a lower-case letter or digit, then lower-case letters, digits, '_', '-', '.')",
                code=ErrorCode.TENANT_INVALID,
            ) from None
        try:
            with scoped(self._engine, tenant_id, write=True) as conn:
                conn.execute(insert(tenants).values(**tenant.model_dump()))
        except IntegrityError:
            raise ForgeError(
                f"tenant {tenant_id!r} exists already",
                code=ErrorCode.TENANT_INVALID,
                hint="see `forge tenants list`",
            ) from None
        return tenant

    def tenants(self) -> list[Tenant]:
        """Every tenant, by id: a cross-tenant read, through forge_tenants() on PostgreSQL."""
        with self._engine.connect() as conn:
            pg = conn.dialect.name == "postgresql"
            query = _TENANTS_PG if pg else select(tenants).order_by(_T.tenant_id)
            return [_tenant(r) for r in conn.execute(query).mappings()]

    def tenant(self, tenant_id: str) -> Tenant:
        """The tenant, or TENANT_INVALID naming the ones there are."""
        with scoped(self._engine, tenant_id) as conn:
            row = conn.execute(select(tenants).where(_T.tenant_id == tenant_id)).mappings().first()
        if row is None:
            raise ForgeError(
                f"no tenant {tenant_id!r}",
                code=ErrorCode.TENANT_INVALID,
                hint="create it with `forge tenants create TENANT` (see `forge tenants list`)",
            )
        return _tenant(row)

    # keys

    def create_key(
        self,
        tenant_id: str,
        role: Role,
        actor: Actor,
        *,
        gate_roles: Sequence[str] = (),
        expires_at: datetime | None = None,
    ) -> IssuedKey:
        """A new key for an existing tenant; its token is in the answer and nowhere else."""
        self.tenant(tenant_id)
        key_id = secrets.token_hex(6)
        token = f"fk_{key_id}_{secrets.token_urlsafe(32)}"
        key = ApiKey(
            key_id=key_id,
            tenant_id=tenant_id,
            role=role,
            actor=actor,
            gate_roles=sorted(set(gate_roles)),
            created_at=datetime.now(UTC),
            expires_at=utc(expires_at) if expires_at else None,
        )
        row = key.model_dump(mode="json", exclude={"created_at", "expires_at", "revoked_at"})
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(
                insert(api_keys).values(
                    **row,
                    token_sha256=_digest(token),
                    created_at=key.created_at,
                    expires_at=key.expires_at,
                )
            )
        return IssuedKey(key=key, token=token)

    def keys(self, tenant_id: str) -> list[ApiKey]:
        """The tenant's keys, newest first, revoked and expired ones included."""
        query = select(api_keys).where(_K.tenant_id == tenant_id)
        with scoped(self._engine, tenant_id) as conn:
            rows = conn.execute(query.order_by(_K.created_at.desc(), _K.key_id)).mappings()
            return [_key(r) for r in rows]

    def revoke(self, tenant_id: str, key_id: str) -> ApiKey:
        """Revoke the tenant's key (again is a no-op); another tenant's key is not found."""
        key_id = key_id.removeprefix("fk_")
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(
                update(api_keys)
                .where(_K.tenant_id == tenant_id, _K.key_id == key_id, _K.revoked_at.is_(None))
                .values(revoked_at=datetime.now(UTC))
            )
            row = (
                conn.execute(select(api_keys).where(_K.tenant_id == tenant_id, _K.key_id == key_id))
                .mappings()
                .first()
            )
        if row is None:
            raise ForgeError(
                f"tenant {tenant_id!r} has no key fk_{key_id}",
                code=ErrorCode.NOT_FOUND,
                hint="see `forge keys list`",
            )
        return _key(row)

    def authenticate(self, token: str, now: datetime | None = None) -> ApiKey:
        """The live key `token` is, or UNAUTHENTICATED saying why not (never which part)."""
        key_id = token_key_id(token)
        if key_id is None:
            raise ForgeError(
                "the bearer token is not a Forge API key (fk_…)", code=ErrorCode.UNAUTHENTICATED
            )
        # Before the key is found its tenant is unknown: the one cross-tenant read of keys, by
        # key id only, through the SECURITY DEFINER function forge_api_key() on PostgreSQL.
        with self._engine.connect() as conn:
            pg = conn.dialect.name == "postgresql"
            query = _KEY_PG if pg else select(api_keys).where(_K.key_id == bindparam("key_id"))
            row = conn.execute(query, {"key_id": key_id}).mappings().first()
        if row is None or not hmac.compare_digest(row["token_sha256"], _digest(token)):
            raise ForgeError(f"API key fk_{key_id} is not valid", code=ErrorCode.UNAUTHENTICATED)
        key = _key(row)
        now = now or datetime.now(UTC)
        if key.revoked_at is not None:
            raise ForgeError(
                f"API key fk_{key_id} was revoked at {key.revoked_at:%Y-%m-%d %H:%M} UTC",
                code=ErrorCode.UNAUTHENTICATED,
            )
        if key.expires_at is not None and key.expires_at <= now:
            raise ForgeError(
                f"API key fk_{key_id} expired at {key.expires_at:%Y-%m-%d %H:%M} UTC",
                code=ErrorCode.UNAUTHENTICATED,
            )
        return key


def open_access_store(database_url: str) -> AccessStore:
    """The tenants and keys in the database at `database_url` (SQLite migrated on open).

    Raises:
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    return AccessStore(open_migrated(database_url))


def _tenant(row: Mapping[Any, Any]) -> Tenant:
    return Tenant(
        tenant_id=row["tenant_id"], created_at=utc(row["created_at"]), created_by=row["created_by"]
    )


def _key(row: Mapping[Any, Any]) -> ApiKey:
    return ApiKey(
        key_id=row["key_id"],
        tenant_id=row["tenant_id"],
        role=row["role"],
        actor=Actor.model_validate(row["actor"]),
        gate_roles=list(row["gate_roles"]),
        created_at=utc(row["created_at"]),
        expires_at=utc(row["expires_at"]) if row["expires_at"] else None,
        revoked_at=utc(row["revoked_at"]) if row["revoked_at"] else None,
    )
