"""The default tenant exists: every run without --tenant belongs to it (issue 34 §6).

`forge keys create --role viewer` refused "no tenant 'default'" while every run was the default
tenant's and `forge tenants show default` worked. New databases get the row from this revision
as they are built; existing ones get it here. A database that made it by hand keeps its row.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import sqlalchemy as sa
from alembic import op

revision: str = "0010"
down_revision: str | None = "0009"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

# Spelled here, not imported from schemas.scope: a revision is frozen as it was written.
_DEFAULT = "default"
_tenants = sa.table(
    "tenants",
    sa.column("tenant_id", sa.String()),
    sa.column("created_at", sa.DateTime(timezone=True)),
    sa.column("created_by", sa.String()),
)


def upgrade() -> None:
    conn = op.get_bind()
    # Migrations run as the owner with no tenant set (rls.py): the row is visible and writable.
    found = conn.execute(
        sa.select(_tenants.c.tenant_id).where(_tenants.c.tenant_id == _DEFAULT)
    ).first()
    if found is None:
        conn.execute(
            sa.insert(_tenants).values(
                tenant_id=_DEFAULT, created_at=datetime.now(UTC), created_by="forge"
            )
        )


def downgrade() -> None:
    # The row may hold keys and settings by now; 0009's schema allows it, so it stays.
    pass
