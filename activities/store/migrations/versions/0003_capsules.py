"""Capsules: capsules.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "capsules",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("name", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("capsule_hash", sa.String(length=80), nullable=False),
        sa.Column("content", _JSON, nullable=False),
        sa.Column("source_run_id", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("created_by", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "name", "version", name=op.f("pk_capsules")),
        sa.UniqueConstraint(
            "tenant_id",
            "name",
            "capsule_hash",
            name=op.f("uq_capsules_tenant_id_name_capsule_hash"),
        ),
    )


def downgrade() -> None:
    op.drop_table("capsules")
