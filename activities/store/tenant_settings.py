"""A tenant's settings (issue 20 §2, §3): quotas and readable input locations, one row each.

`forge tenants update` (workers/cli/access.py) writes them; run admission reads the quotas
(activities/store/admissions.py) and every path that reads a run's inputs reads the locations
(workers/services/capsule_runs.input_policy). A tenant with no row has no quota and no location.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError
from sqlalchemy import Engine, insert, select, update

from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import tenant_settings
from activities.store.tenancy import scoped
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.tenant_settings import TenantSettings, input_bucket

__all__ = [
    "KEEP",
    "SettingsChange",
    "TenantSettingsStore",
    "open_tenant_settings",
]

_S = tenant_settings.c
KEEP = object()


@dataclass(frozen=True)
class SettingsChange:
    """One update: a quota left as KEEP stays; None makes it unlimited."""

    max_concurrent_runs: Any = KEEP
    max_tokens_per_day: Any = KEEP
    add_roots: tuple[str, ...] = ()
    remove_roots: tuple[str, ...] = ()
    add_buckets: tuple[str, ...] = ()
    remove_buckets: tuple[str, ...] = ()

    def applied(self, current: TenantSettings, actor: str) -> TenantSettings:
        """`current` with this change, validated; TENANT_INVALID names the bad value."""
        buckets = [_bucket(b) for b in self.add_buckets]
        gone = {_bucket(b) for b in self.remove_buckets}
        _must_hold("input root", self.remove_roots, current.input_roots)
        _must_hold("input bucket", gone, current.input_buckets)
        fields: dict[str, Any] = {
            "input_roots": _merged(current.input_roots, self.add_roots, self.remove_roots),
            "input_buckets": _merged(current.input_buckets, buckets, gone),
            "updated_at": datetime.now(UTC),
            "updated_by": actor,
        }
        for name in ("max_concurrent_runs", "max_tokens_per_day"):
            value = getattr(self, name)
            if value is not KEEP:
                fields[name] = value
        try:
            return TenantSettings.model_validate({**current.model_dump(), **fields})
        except ValidationError as e:
            first = e.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise ForgeError(f"{where}: {first['msg']}", code=ErrorCode.TENANT_INVALID) from None


class TenantSettingsStore:
    """Every tenant's settings row."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> TenantSettingsStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def get(self, tenant_id: str) -> TenantSettings:
        """The tenant's settings (no quota, no location when it has no row)."""
        with scoped(self._engine, tenant_id) as conn:
            row = conn.execute(select(tenant_settings).where(_S.tenant_id == tenant_id))
            found = row.mappings().first()
        return _settings(found) if found else TenantSettings(tenant_id=tenant_id)

    def update(self, tenant_id: str, change: SettingsChange, actor: str) -> TenantSettings:
        """Apply `change` atomically (a concurrent update waits); returns the new settings."""
        with scoped(self._engine, tenant_id, write=True) as conn:
            query = select(tenant_settings).where(_S.tenant_id == tenant_id)
            if conn.dialect.name == "postgresql":
                query = query.with_for_update()
            found = conn.execute(query).mappings().first()
            current = _settings(found) if found else TenantSettings(tenant_id=tenant_id)
            new = change.applied(current, actor)
            values = new.model_dump(mode="json", exclude={"tenant_id"})
            values["updated_at"] = new.updated_at
            if found:
                conn.execute(update(tenant_settings).where(_S.tenant_id == tenant_id), values)
            else:
                conn.execute(insert(tenant_settings).values(tenant_id=tenant_id, **values))
        return new


def open_tenant_settings(database_url: str) -> TenantSettingsStore:
    """The tenant settings in the database at `database_url` (SQLite migrated on open)."""
    return TenantSettingsStore(open_migrated(database_url))


def _bucket(text: str) -> str:
    try:
        return str(input_bucket(text))
    except ValueError as e:
        raise ForgeError(
            f"input bucket {e}",
            code=ErrorCode.TENANT_INVALID,
            hint="e.g. --add-input-bucket acme-inputs/reports/",
        ) from None


def _must_hold(what: str, removed: Iterable[str], held: tuple[str, ...]) -> None:
    missing = sorted(set(removed) - set(held))
    if missing:
        raise ForgeError(
            f"cannot remove {what} {', '.join(map(repr, missing))}: the tenant does not have it",
            code=ErrorCode.TENANT_INVALID,
            hint=f"the tenant's {what}s: {', '.join(held) or 'none'}",
        )


def _merged(held: tuple[str, ...], add: Iterable[str], remove: Iterable[str]) -> tuple[str, ...]:
    gone = set(remove)
    out = [x for x in held if x not in gone]
    out += [x for x in add if x not in out]
    return tuple(out)


def _settings(row: Mapping[Any, Any]) -> TenantSettings:
    return TenantSettings(
        tenant_id=row["tenant_id"],
        max_concurrent_runs=row["max_concurrent_runs"],
        max_tokens_per_day=row["max_tokens_per_day"],
        input_roots=tuple(row["input_roots"]),
        input_buckets=tuple(row["input_buckets"]),
        updated_at=utc(row["updated_at"]),
        updated_by=row["updated_by"],
    )
