"""Schedules: schedule_forces (forced backfills) and the claim a force re-ran.

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-26
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "schedule_forces",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("schedule", sa.String(length=200), nullable=False),
        sa.Column("force_id", sa.String(length=200), nullable=False),
        sa.Column("start_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("end_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(length=200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint(
            "tenant_id", "schedule", "force_id", name=op.f("pk_schedule_forces")
        ),
    )
    op.add_column("schedule_claims", sa.Column("forced_by", sa.String(length=200), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("schedule_claims") as batch:
        batch.drop_column("forced_by")
    op.drop_table("schedule_forces")
