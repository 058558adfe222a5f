"""Row-level security: every table carries its tenant and PostgreSQL enforces it.

artifacts_published gains tenant_id (backfilled from the run's events). On PostgreSQL every
table gets ENABLE + FORCE ROW LEVEL SECURITY and the policies of migrations/rls.py, and four
SECURITY DEFINER functions are the only cross-tenant reads: a key by its id (authentication,
before the tenant is known), the tenant list, the tenants with events, the tenant of a run id
(attributing a masked output to its run) and the live webhooks.

Numbered 0008 on branch `rls`; the tenant-quotas branch also adds a 0008 and the merge
renumbers one of them.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

from activities.store.migrations.rls import enable_tenant_rls

revision: str = "0008"
down_revision: str | None = "0007"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

TENANT_TABLES = (
    "events",
    "tenant_heads",
    "artifacts_published",
    "skills",
    "capsules",
    "schedule_claims",
    "schedule_forces",
    "tenants",
    "api_keys",
    "idempotency_records",
    "webhooks",
)

# name -> (signature, returns, body). Each runs as the owner with no tenant set, so the
# owner's unscoped policy lets it read across tenants: these queries and nothing else.
FUNCTIONS = {
    "forge_api_key": (
        "p_key_id text",
        "SETOF api_keys",
        "SELECT * FROM api_keys WHERE key_id = p_key_id",
    ),
    "forge_tenants": ("", "SETOF tenants", "SELECT * FROM tenants ORDER BY tenant_id"),
    "forge_event_tenants": (
        "",
        "SETOF text",
        "SELECT tenant_id::text FROM tenant_heads ORDER BY tenant_id",
    ),
    "forge_run_tenant": (
        "p_run_id text",
        "SETOF text",
        "SELECT tenant_id::text FROM events WHERE run_id = p_run_id ORDER BY tenant_seq LIMIT 1",
    ),
    "forge_live_webhooks": (
        "",
        "SETOF webhooks",
        "SELECT * FROM webhooks WHERE deleted_at IS NULL ORDER BY created_at, webhook_id",
    ),
}

_ORPHANS = "SELECT DISTINCT run_id FROM artifacts_published WHERE tenant_id IS NULL ORDER BY run_id"


def upgrade() -> None:
    op.add_column("artifacts_published", sa.Column("tenant_id", sa.String(200), nullable=True))
    op.execute(
        "UPDATE artifacts_published SET tenant_id = (SELECT e.tenant_id FROM events e "
        "WHERE e.run_id = artifacts_published.run_id ORDER BY e.tenant_seq LIMIT 1)"
    )
    orphans = [row[0] for row in op.get_bind().execute(sa.text(_ORPHANS))]
    if orphans:
        raise RuntimeError(
            f"artifacts_published holds publications of runs with no events, so their tenant "
            f"is unknown: {', '.join(orphans[:20])}; set it with UPDATE artifacts_published "
            "SET tenant_id = '<tenant>' WHERE run_id = '<run>' (or delete them) and run "
            "`forge db upgrade` again"
        )
    with op.batch_alter_table("artifacts_published") as batch:
        batch.alter_column("tenant_id", existing_type=sa.String(200), nullable=False)
    op.create_index(op.f("ix_artifacts_published_tenant_id"), "artifacts_published", ["tenant_id"])
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in TENANT_TABLES:
        enable_tenant_rls(table)
    schema = op.get_bind().execute(sa.text("SELECT current_schema()")).scalar_one()
    for name, (signature, returns, body) in FUNCTIONS.items():
        # The tenant is cleared for the query and restored after (a function-level SET clause
        # would do it, but only a superuser may SET a custom parameter there).
        op.execute(
            f"CREATE OR REPLACE FUNCTION {name}({signature}) RETURNS {returns} "
            "LANGUAGE plpgsql STABLE SECURITY DEFINER "
            f'SET search_path = "{schema}", pg_temp AS $$ '
            "DECLARE saved text := coalesce(current_setting('forge.tenant', true), ''); "
            "BEGIN PERFORM set_config('forge.tenant', '', true); "
            f"RETURN QUERY {body}; "
            "PERFORM set_config('forge.tenant', saved, true); RETURN; END $$"
        )
        # Functions are executable by PUBLIC by default; only the app role is granted it.
        op.execute(f"REVOKE ALL ON FUNCTION {name}({signature}) FROM PUBLIC")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        for name, (signature, _, _) in FUNCTIONS.items():
            op.execute(f"DROP FUNCTION IF EXISTS {name}({signature})")
        for table in TENANT_TABLES:
            op.execute(f'DROP POLICY IF EXISTS forge_tenant_isolation ON "{table}"')
            op.execute(f'DROP POLICY IF EXISTS forge_owner_unscoped ON "{table}"')
            op.execute(f'ALTER TABLE "{table}" NO FORCE ROW LEVEL SECURITY')
            op.execute(f'ALTER TABLE "{table}" DISABLE ROW LEVEL SECURITY')
    op.drop_index(op.f("ix_artifacts_published_tenant_id"), table_name="artifacts_published")
    with op.batch_alter_table("artifacts_published") as batch:
        batch.drop_column("tenant_id")
