"""Per-transaction tenant scope: what PostgreSQL's row-level security policies compare against.

Every table carries `tenant_id`; on PostgreSQL a policy lets a transaction see and write only
the rows whose tenant_id equals the transaction's `forge.tenant` setting. The setting is
transaction-local (`set_config(..., true)`, the function form of SET LOCAL), so a pooled
connection never carries one request's tenant into the next transaction, and a transaction
that sets none sees nothing (as any role but the schema owner; see docs/isolation.md).
SQLite has no row-level security: there every query names its tenant itself.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, text
from sqlalchemy.engine import Connection

from activities.store.engine import WRITE_OPTION

__all__ = ["TENANT_SETTING", "scoped", "use_tenant"]

TENANT_SETTING = "forge.tenant"
_SET = text(f"SELECT set_config('{TENANT_SETTING}', :tenant, true)")


def use_tenant(conn: Connection, tenant_id: str) -> None:
    """Scope the rest of `conn`'s current transaction to `tenant_id` (PostgreSQL; SQLite no-op).

    Raises:
        ValueError: `tenant_id` is empty: an empty scope would read like "no tenant".
    """
    if not tenant_id:
        raise ValueError(
            "a tenant-scoped transaction needs a tenant id, got an empty one; pass the "
            "request's or the run's scope.tenant"
        )
    if conn.dialect.name == "postgresql":
        conn.execute(_SET, {"tenant": tenant_id})


@contextmanager
def scoped(
    engine: Engine, tenant_id: str, *, write: bool = False, **options: Any
) -> Iterator[Connection]:
    """One transaction that acts for `tenant_id` only; `write` takes SQLite's lock up front.

    `options` are execution options set before the transaction begins (e.g. isolation_level).
    """
    with engine.connect() as conn:
        if write:
            options[WRITE_OPTION] = True
        if options:
            conn.execution_options(**options)
        with conn.begin():
            use_tenant(conn, tenant_id)
            yield conn
