"""The database skill registry: skills.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0002"
down_revision: str | None = "0001"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "skills",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("skill_id", sa.String(length=200), nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("sha256", sa.String(length=80), nullable=False),
        sa.Column("manifest", _JSON, nullable=False),
        sa.Column("files", _JSON, nullable=False),
        sa.Column("deprecated", sa.Boolean(), nullable=False),
        sa.Column("registered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("registered_by", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", "skill_id", "version", name=op.f("pk_skills")),
    )


def downgrade() -> None:
    op.drop_table("skills")
