"""Schedules: schedule_claims.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0004"
down_revision: str | None = "0003"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "schedule_claims",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("scheduled_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("attempt", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("refused", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("claimed_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id", "schedule", "scheduled_at", name=op.f("pk_schedule_claims")
        ),
    )


def downgrade() -> None:
    op.drop_table("schedule_claims")
