"""PostgreSQL enforces tenant isolation (issue 20 §1): row-level security on every table.

Connected as the application role (owning nothing, no BYPASSRLS), a transaction with tenant A
set reads none of B's rows and can write none for B, in every table of the live schema; a
transaction with no tenant reads and writes nothing; a pooled connection that served A serves
B next without carrying A's scope. Rows are written through the stores, as the app role.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import Engine, create_engine, insert, select, text
from sqlalchemy.engine import Connection
from sqlalchemy.exc import DBAPIError, ProgrammingError

from activities.store.access import open_access_store
from activities.store.engine import normalize_url
from activities.store.events import open_event_store
from activities.store.roles import AppRoleUnsafe, app_role_of, grant_app_role
from activities.store.tables import metadata
from activities.store.webhooks import open_webhook_store
from tests.store.tenant_rows import RlsDatabase, rls_database, seed_tenant

__all__ = ["rls_database"]

A, B = "acme", "globex"
# The one table without a tenant: Alembic's own record of the schema revision.
UNSCOPED = {"alembic_version"}
_TABLES = text(
    "SELECT relname, relrowsecurity, relforcerowsecurity FROM pg_class "
    "WHERE relnamespace = current_schema()::regnamespace AND relkind IN ('r', 'p') "
    "ORDER BY relname"
)
_POLICIES = text(
    "SELECT tablename, policyname, roles::text[] AS roles, qual, with_check FROM pg_policies "
    "WHERE schemaname = current_schema()"
)


@pytest.fixture(scope="module")
def seeded(rls_database: RlsDatabase, tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    work = tmp_path_factory.mktemp("rls")
    return {t: seed_tenant(rls_database.app_url, t, work) for t in (A, B)}


@pytest.fixture(scope="module")
def app(rls_database: RlsDatabase, seeded: dict[str, str]) -> Iterator[Engine]:
    engine = create_engine(normalize_url(rls_database.app_url))
    yield engine
    engine.dispose()


@pytest.fixture(scope="module")
def tables(app: Engine) -> list[str]:
    with app.connect() as conn:
        return [r.relname for r in conn.execute(_TABLES) if r.relname not in UNSCOPED]


def as_tenant(conn: Connection, tenant: str) -> None:
    conn.execute(text("SELECT set_config('forge.tenant', :t, true)"), {"t": tenant})


def count(conn: Connection, table: str, where: str = "true", **params: Any) -> int:
    return int(
        conn.execute(text(f'SELECT count(*) FROM "{table}" WHERE {where}'), params).scalar_one()
    )


def test_every_table_has_a_tenant_and_forced_row_security(app: Engine, tables: list[str]) -> None:
    assert set(metadata.tables) <= set(tables)  # the live schema, not the code's list
    with app.connect() as conn:
        rows = {r.relname: r for r in conn.execute(_TABLES)}
        policies = {(p.tablename, p.policyname): p for p in conn.execute(_POLICIES)}
        columns = {
            r[0]
            for r in conn.execute(
                text(
                    "SELECT table_name FROM information_schema.columns "
                    "WHERE table_schema = current_schema() AND column_name = 'tenant_id'"
                )
            )
        }
    missing = []
    for table in tables:
        tenant = policies.get((table, "forge_tenant_isolation"))
        same = "current_setting('forge.tenant'::text, true)"
        if table not in columns:
            missing.append(f"{table}: no tenant_id column")
        elif not (rows[table].relrowsecurity and rows[table].relforcerowsecurity):
            missing.append(f"{table}: row level security not enabled and forced")
        elif tenant is None or same not in tenant.qual or same not in tenant.with_check:
            missing.append(f"{table}: no forge_tenant_isolation policy on forge.tenant")
    assert not missing, (
        "every table needs tenant_id, ENABLE + FORCE ROW LEVEL SECURITY and the tenant policy: "
        f"call enable_tenant_rls() (activities/store/migrations/rls.py) in its migration: {missing}"
    )


def test_every_table_holds_rows_of_both_tenants(
    rls_database: RlsDatabase, tables: list[str], seeded: dict[str, str]
) -> None:
    # The isolation tests below would prove nothing on empty tables.
    owner = create_engine(normalize_url(rls_database.owner_url))
    try:
        with owner.connect() as conn:  # the owner, unscoped: every row (its own policy)
            empty = [
                t for t in tables for x in (A, B) if count(conn, t, "tenant_id = :x", x=x) == 0
            ]
    finally:
        owner.dispose()
    assert not empty


def test_tenant_a_reads_only_its_own_rows_in_every_table(app: Engine, tables: list[str]) -> None:
    with app.begin() as conn:
        as_tenant(conn, A)
        seen = {t: (count(conn, t), count(conn, t, "tenant_id <> :a", a=A)) for t in tables}
    assert all(mine > 0 and others == 0 for mine, others in seen.values()), seen


def test_tenant_a_can_write_no_row_for_b_in_any_table(app: Engine, tables: list[str]) -> None:
    written = []
    for table in tables:
        with app.begin() as conn:
            as_tenant(conn, A)
            row = dict(conn.execute(select(metadata.tables[table]).limit(1)).mappings().one())
        for statement in (
            insert(metadata.tables[table]).values(**{**row, "tenant_id": B}),
            text(f'UPDATE "{table}" SET tenant_id = :b').bindparams(b=B),
        ):
            with app.connect() as conn, conn.begin():
                as_tenant(conn, A)
                try:
                    conn.execute(statement)
                    written.append(f"{table}: {statement}")
                except ProgrammingError as exc:
                    assert "row-level security" in str(exc.orig), exc
    assert not written


def test_no_tenant_set_reads_and_writes_nothing(app: Engine, tables: list[str]) -> None:
    with app.begin() as conn:
        assert {t: count(conn, t) for t in tables} == dict.fromkeys(tables, 0)
        assert conn.execute(text("UPDATE events SET type = type")).rowcount == 0
    with app.connect() as conn, conn.begin(), pytest.raises(ProgrammingError, match="row-level"):
        conn.execute(text("INSERT INTO tenants VALUES ('x', now(), 'nobody')"))


def test_a_pooled_connection_never_carries_a_tenant_into_the_next_transaction(
    rls_database: RlsDatabase, tables: list[str]
) -> None:
    # One server connection reused for every transaction, as a transaction-mode pooler does.
    engine = create_engine(normalize_url(rls_database.app_url), pool_size=1, max_overflow=0)
    pids, seen = set(), []
    try:
        for tenant in (A, B, A, B, None, B, None):
            with engine.begin() as conn:
                pids.add(conn.execute(text("SELECT pg_backend_pid()")).scalar_one())
                if tenant is not None:
                    as_tenant(conn, tenant)
                visible = {
                    r[0]
                    for t in tables
                    for r in conn.execute(text(f'SELECT DISTINCT tenant_id FROM "{t}"'))
                }
                seen.append((tenant, visible))
    finally:
        engine.dispose()
    assert len(pids) == 1
    assert seen == [(t, set() if t is None else {t}) for t, _ in seen]


def test_the_stores_scope_each_call_on_one_pooled_connection(rls_database: RlsDatabase) -> None:
    store = open_event_store(rls_database.app_url)
    try:
        for tenant in (A, B, A):
            assert {e.scope.tenant for _, e in store.page(tenant)} == {tenant}
            assert store.verify_chain(tenant).ok and store.verify_chain(tenant).checked == 2
        assert store.list_events() == []  # unscoped, as the app role: nothing
        assert store.tenants() == [A, B]  # the SECURITY DEFINER function: ids only
    finally:
        store.close()


def test_cross_tenant_reads_go_only_through_the_definer_functions(
    rls_database: RlsDatabase, seeded: dict[str, str], app: Engine
) -> None:
    with open_access_store(rls_database.app_url) as access:
        assert {access.authenticate(seeded[t]).tenant_id for t in (A, B)} == {A, B}
        assert [t.tenant_id for t in access.tenants()] == sorted([A, B, "default"])  # 0010
    with open_webhook_store(rls_database.app_url) as hooks:
        assert {w.tenant_id for w, _ in hooks.live()} == {A, B}
    with app.begin() as conn:  # a table read by key id, without the function: nothing
        assert count(conn, "api_keys") == 0


def test_the_owner_with_a_tenant_set_is_held_to_it(
    rls_database: RlsDatabase, tables: list[str]
) -> None:
    owner = create_engine(normalize_url(rls_database.owner_url))
    try:
        with owner.begin() as conn:
            as_tenant(conn, B)
            assert all(count(conn, t, "tenant_id <> :b", b=B) == 0 for t in tables)
    finally:
        owner.dispose()


def test_an_app_role_that_could_bypass_row_security_is_refused(
    rls_database: RlsDatabase,
) -> None:
    owner = create_engine(normalize_url(rls_database.owner_url))
    try:
        with pytest.raises(AppRoleUnsafe, match="superuser or has BYPASSRLS"):
            grant_app_role(owner, "postgres")
        with pytest.raises(AppRoleUnsafe, match="owns"):
            grant_app_role(owner, rls_database.owner)
        with pytest.raises(AppRoleUnsafe, match="does not exist"):
            grant_app_role(owner, "nobody_at_all")
    finally:
        owner.dispose()
    assert app_role_of(rls_database.app_url, rls_database.owner_url) == rls_database.app
    assert app_role_of(rls_database.owner_url, rls_database.owner_url) is None
    with pytest.raises(AppRoleUnsafe, match="different databases"):
        app_role_of(
            rls_database.app_url.replace(rls_database.database, "other"), rls_database.owner_url
        )


def test_app_role_errors_are_named_database_errors(app: Engine) -> None:
    # The app role owns nothing, so it cannot switch row security off.
    with app.connect() as conn, pytest.raises(DBAPIError, match="must be owner"):
        conn.execute(text("ALTER TABLE events NO FORCE ROW LEVEL SECURITY"))
