"""Row-level security statements for migrations: one policy pair per tenant table (PostgreSQL).

A later migration that adds a table calls `enable_tenant_rls(table)` for it in the same
migration; tests/store/test_row_security.py fails on any table of the live schema without
FORCE ROW LEVEL SECURITY and the tenant policy. Kept as plain SQL strings so a migration's
effect never changes when this module's callers do.
"""

from __future__ import annotations

from alembic import op

__all__ = ["OWNER_POLICY", "TENANT_POLICY", "enable_tenant_rls", "tenant_rls_statements"]

TENANT_POLICY = "forge_tenant_isolation"
OWNER_POLICY = "forge_owner_unscoped"

# NULL (never set in this session) and '' (set, then the transaction that set it ended) both
# mean "no tenant": the comparison is not true and the row is invisible and unwritable.
_SAME_TENANT = "tenant_id = current_setting('forge.tenant', true)"
_NO_TENANT = "coalesce(current_setting('forge.tenant', true), '') = ''"


def tenant_rls_statements(table: str) -> list[str]:
    """The statements that put `table` under the tenant policy.

    Every role sees only the rows of the transaction's tenant. The schema owner (the role
    running this migration) alone also sees every row while no tenant is set: migrations,
    `forge db` administration and the SECURITY DEFINER functions of the few cross-tenant
    reads need it, and a single-URL deployment connecting as the owner keeps working.
    With a tenant set, the owner too is held to that tenant (FORCE makes policies apply
    to the owner at all).
    """
    return [
        f'ALTER TABLE "{table}" ENABLE ROW LEVEL SECURITY',
        f'ALTER TABLE "{table}" FORCE ROW LEVEL SECURITY',
        f'DROP POLICY IF EXISTS {TENANT_POLICY} ON "{table}"',
        f'CREATE POLICY {TENANT_POLICY} ON "{table}" '
        f"USING ({_SAME_TENANT}) WITH CHECK ({_SAME_TENANT})",
        f'DROP POLICY IF EXISTS {OWNER_POLICY} ON "{table}"',
        f'CREATE POLICY {OWNER_POLICY} ON "{table}" TO CURRENT_USER '
        f"USING ({_NO_TENANT}) WITH CHECK ({_NO_TENANT})",
    ]


def enable_tenant_rls(table: str) -> None:
    """Put `table` under the tenant policy; a no-op on SQLite (which has no row security)."""
    if op.get_bind().dialect.name != "postgresql":
        return
    for statement in tenant_rls_statements(table):
        op.execute(statement)
