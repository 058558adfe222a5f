"""Tenant settings and run admissions: what each tenant may read and run (issue 20 §2, §3).

`tenant_settings` holds one row per configured tenant: its quotas (concurrent runs, tokens per
day; NULL is unlimited) and its readable input locations (local roots, S3 buckets or
bucket/prefix). `run_admissions` holds one row per run admitted under a tenant's quota: the
token ceiling it was given at start and, once it ended, what it used.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-27
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from activities.store.migrations.rls import enable_tenant_rls

revision: str = "0009"
down_revision: str | None = "0008"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "tenant_settings",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("max_concurrent_runs", sa.Integer(), nullable=True),
        sa.Column("max_tokens_per_day", sa.BigInteger(), nullable=True),
        sa.Column("input_roots", _JSON, nullable=False),
        sa.Column("input_buckets", _JSON, nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("updated_by", sa.String(length=200), nullable=False),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_settings")),
    )
    op.create_table(
        "run_admissions",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("admitted_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("day", sa.String(length=10), nullable=False),
        sa.Column("token_ceiling", sa.BigInteger(), nullable=True),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("tokens_used", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", "run_id", name=op.f("pk_run_admissions")),
    )
    op.create_index(
        op.f("ix_run_admissions_tenant_id_ended_at"), "run_admissions", ["tenant_id", "ended_at"]
    )
    op.create_index(op.f("ix_run_admissions_tenant_id_day"), "run_admissions", ["tenant_id", "day"])
    enable_tenant_rls("tenant_settings")
    enable_tenant_rls("run_admissions")


def downgrade() -> None:
    op.drop_index(op.f("ix_run_admissions_tenant_id_day"), table_name="run_admissions")
    op.drop_index(op.f("ix_run_admissions_tenant_id_ended_at"), table_name="run_admissions")
    op.drop_table("run_admissions")
    op.drop_table("tenant_settings")
