"""Migration 0008 on a database holding data: published artifacts get their run's tenant."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from alembic import command
from sqlalchemy import Engine, select, text

from activities.store.engine import create_store_engine
from activities.store.migrate import _config, head_revision, upgrade_engine
from activities.store.tables import artifacts_published
from tests.store.postgres import PostgresServer, create_database, drop_database

T0 = datetime(2026, 1, 1, tzinfo=UTC)
DIGEST = "sha256:" + "a" * 64


@pytest.fixture(params=["sqlite", "postgres"])
def engine(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Engine]:
    if request.param == "sqlite":
        found = create_store_engine(f"sqlite:///{tmp_path / 'forge.db'}")
        yield found
        found.dispose()
        return
    server: PostgresServer = request.getfixturevalue("postgres_server")
    name = create_database(server)
    found = create_store_engine(server.url(name))
    try:
        yield found
    finally:
        found.dispose()
        drop_database(server, name)


def _at_0007(engine: Engine) -> None:
    config = _config()
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0007")


def _event(run_id: str, tenant: str) -> dict[str, object]:
    return {
        "stream_id": f"run:{run_id}",
        "seq": 1,
        "event_id": f"{run_id}:started",
        "type": "run.started.v1",
        "actor": {},
        "tenant_id": tenant,
        "tenant_seq": 1,
        "project_id": "default",
        "run_id": run_id,
        "timestamp": T0,
        "payload": {},
        "content_hash": DIGEST,
    }


def _publication(run_id: str) -> dict[str, object]:
    return {
        "run_id": run_id,
        "path": "out.csv",
        "version": 1,
        "sha256": DIGEST,
        "size_bytes": 1,
        "step_key": "s0",
        "contract_hash": DIGEST,
        "provenance": {},
        "published_at": T0,
    }


def _insert_0007(engine: Engine, table: str, row: dict[str, object]) -> None:
    # Raw SQL: the table has its 0007 shape, without the tenant_id column tables.py now has.
    values = {
        k: json.dumps(v)
        if isinstance(v, dict)
        else v.isoformat(sep=" ")
        if isinstance(v, datetime) and engine.dialect.name == "sqlite"
        else v
        for k, v in row.items()
    }
    columns = ", ".join(values)
    params = ", ".join(f":{k}" for k in values)
    with engine.begin() as conn:
        conn.execute(text(f"INSERT INTO {table} ({columns}) VALUES ({params})"), values)


def test_a_publication_takes_the_tenant_of_its_runs_events(engine: Engine) -> None:
    _at_0007(engine)
    _insert_0007(engine, "events", _event("run-1", "acme"))
    _insert_0007(engine, "artifacts_published", _publication("run-1"))
    assert upgrade_engine(engine) == head_revision()
    with engine.connect() as conn:
        tenants = conn.execute(select(artifacts_published.c.tenant_id)).scalars().all()
    assert tenants == ["acme"]


def test_a_publication_of_a_run_without_events_stops_the_upgrade_and_says_what_to_do(
    engine: Engine,
) -> None:
    _at_0007(engine)
    _insert_0007(engine, "artifacts_published", _publication("run-orphan"))
    with pytest.raises(RuntimeError, match="run-orphan.*UPDATE artifacts_published"):
        upgrade_engine(engine)
