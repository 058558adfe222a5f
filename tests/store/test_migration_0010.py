"""Migration 0010: the default tenant exists in new databases and in existing ones."""

from __future__ import annotations

from datetime import UTC, datetime

from alembic import command
from sqlalchemy import Engine, select

from activities.store.migrate import _config, upgrade_engine
from activities.store.tables import tenants
from tests.store.test_migration_0008 import engine  # noqa: F401  (the sqlite/postgres fixture)

T0 = datetime(2026, 1, 1, tzinfo=UTC)


def _at(db: Engine, revision: str) -> None:
    config = _config()
    with db.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, revision)


def _tenants(db: Engine) -> dict[str, str]:
    with db.connect() as conn:
        rows = conn.execute(select(tenants.c.tenant_id, tenants.c.created_by))
        return {r.tenant_id: r.created_by for r in rows}


def test_a_new_database_has_the_default_tenant(engine: Engine) -> None:  # noqa: F811
    upgrade_engine(engine)
    assert _tenants(engine) == {"default": "forge"}


def test_an_existing_database_gets_it_and_keeps_its_tenants(engine: Engine) -> None:  # noqa: F811
    _at(engine, "0009")
    with engine.begin() as conn:
        conn.execute(tenants.insert().values(tenant_id="acme", created_at=T0, created_by="ana"))
    upgrade_engine(engine)
    assert _tenants(engine) == {"acme": "ana", "default": "forge"}


def test_a_default_tenant_made_by_hand_is_kept(engine: Engine) -> None:  # noqa: F811
    _at(engine, "0009")
    with engine.begin() as conn:
        conn.execute(tenants.insert().values(tenant_id="default", created_at=T0, created_by="bo"))
    upgrade_engine(engine)
    assert _tenants(engine) == {"default": "bo"}
