"""Through a transaction-pooling connection pool (a real PgBouncer, pool_mode = transaction,
one server connection), alternating and concurrent tenants never see each other's rows, and
Forge's own stores work unchanged (issue 20 §4).

Every client transaction runs on the same server connection: what one transaction's tenant
setting could leak, the next one, from another client, would see. `set_config(..., true)` ends
with its transaction, so none does; a transaction that sets no tenant sees nothing.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import Engine, text

from activities.store.engine import create_store_engine
from activities.store.events import open_event_store
from tests.store.pgbouncer import pgbouncer_for
from tests.store.tenant_rows import RlsDatabase, rls_database
from tests.store.test_row_security import _TABLES, UNSCOPED, A, B, as_tenant, seeded

__all__ = ["rls_database", "seeded"]


@pytest.fixture(scope="module")
def bouncer(rls_database: RlsDatabase, seeded: dict[str, str]) -> Iterator[str]:
    with pgbouncer_for(rls_database, rls_database.app) as url:
        yield url


def _client(url: str) -> Engine:
    """A client of the pooler as Forge connects (psycopg 3, Forge's engine options)."""
    return create_store_engine(url)


@pytest.fixture(scope="module")
def tables(bouncer: str) -> list[str]:
    engine = _client(bouncer)
    try:
        with engine.connect() as conn:
            return [r.relname for r in conn.execute(_TABLES) if r.relname not in UNSCOPED]
    finally:
        engine.dispose()


def _visible(engine: Engine, tenant: str | None, tables: list[str]) -> tuple[int, set[str]]:
    """(the server backend's pid, every tenant_id visible in every table) in one transaction."""
    with engine.begin() as conn:
        pid = conn.execute(text("SELECT pg_backend_pid()")).scalar_one()
        if tenant is not None:
            as_tenant(conn, tenant)
        seen = {
            row[0]
            for t in tables
            for row in conn.execute(text(f'SELECT DISTINCT tenant_id FROM "{t}"'))
        }
    return pid, seen


def test_alternating_clients_on_one_server_connection_see_only_their_tenant(
    bouncer: str, tables: list[str]
) -> None:
    first, second = _client(bouncer), _client(bouncer)
    try:
        pids, seen = set(), []
        for engine, tenant in ((first, A), (second, B), (first, None), (second, A), (first, B),
                               (second, None), (first, A)):  # fmt: skip
            pid, visible = _visible(engine, tenant, tables)
            pids.add(pid)
            seen.append((tenant, visible))
    finally:
        first.dispose()
        second.dispose()
    assert len(pids) == 1, f"the pooler used {len(pids)} server connections, not one"
    assert seen == [(t, set() if t is None else {t}) for t, _ in seen]


def test_concurrent_tenants_through_the_pooler_never_see_each_other(
    bouncer: str, tables: list[str]
) -> None:
    wrong: list[tuple[str | None, set[str]]] = []
    pids: set[int] = set()

    def work(tenant: str | None) -> None:
        engine = _client(bouncer)
        try:
            for _ in range(15):
                pid, visible = _visible(engine, tenant, tables)
                pids.add(pid)
                if visible != (set() if tenant is None else {tenant}):
                    wrong.append((tenant, visible))
        finally:
            engine.dispose()

    threads = [threading.Thread(target=work, args=(t,)) for t in (A, B, A, B, None)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(pids) == 1
    assert wrong == []


def test_forges_stores_work_through_the_pooler(bouncer: str) -> None:
    """The event store, scoped per call, through transaction pooling: more calls than psycopg's
    prepare threshold, so a server-side prepared statement would collide across clients."""
    stores = [open_event_store(bouncer) for _ in range(2)]  # checks the schema, through it too
    try:
        for i in range(12):
            tenant = (A, B)[i % 2]
            store = stores[i % 2 if i < 6 else (i + 1) % 2]
            assert {e.scope.tenant for _, e in store.page(tenant)} == {tenant}
            assert store.verify_chain(tenant).ok
        assert stores[0].list_events() == []  # no tenant set: nothing, through the pooler too
    finally:
        for store in stores:
            store.close()
