"""Initial schema: events, tenant_heads, artifacts_published.

Revision ID: 0001
Revises:
Create Date: 2026-11-23
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def upgrade() -> None:
    op.create_table(
        "artifacts_published",
        sa.Column("run_id", sa.String(length=200), nullable=False),
        sa.Column("path", sa.String(length=1000), nullable=False),
        sa.Column("version", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("sha256", sa.String(length=80), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("media_type", sa.String(length=200), nullable=True),
        sa.Column("step_key", sa.String(length=200), nullable=False),
        sa.Column("contract_hash", sa.String(length=80), nullable=False),
        sa.Column("provenance", _JSON, nullable=False),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("run_id", "path", "version", name=op.f("pk_artifacts_published")),
        sa.UniqueConstraint(
            "run_id", "path", "sha256", name=op.f("uq_artifacts_published_run_id_path_sha256")
        ),
    )
    op.create_table(
        "events",
        sa.Column("stream_id", sa.String(length=200), nullable=False),
        sa.Column("seq", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("event_id", sa.String(length=200), nullable=False),
        sa.Column("type", sa.String(length=200), nullable=False),
        sa.Column("actor", _JSON, nullable=False),
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("tenant_seq", sa.BigInteger(), nullable=False),
        sa.Column("project_id", sa.String(length=200), nullable=False),
        sa.Column("run_id", sa.String(length=200), nullable=True),
        sa.Column("session_id", sa.String(length=200), nullable=True),
        sa.Column("caused_by", sa.String(length=200), nullable=True),
        sa.Column("timestamp", sa.DateTime(timezone=True), nullable=False),
        sa.Column("prompt_hash", sa.String(length=80), nullable=True),
        sa.Column("payload", _JSON, nullable=False),
        sa.Column("content_hash", sa.String(length=80), nullable=False),
        sa.Column("prev_hash", sa.String(length=80), nullable=True),
        sa.Column("signature", sa.Text(), nullable=True),
        sa.PrimaryKeyConstraint("stream_id", "seq", name=op.f("pk_events")),
        sa.UniqueConstraint("event_id", name=op.f("uq_events_event_id")),
        sa.UniqueConstraint("tenant_id", "tenant_seq", name=op.f("uq_events_tenant_id_tenant_seq")),
    )
    op.create_index(op.f("ix_events_run_id"), "events", ["run_id"], unique=False)
    op.create_index(op.f("ix_events_tenant_id"), "events", ["tenant_id"], unique=False)
    op.create_index(op.f("ix_events_type"), "events", ["type"], unique=False)
    op.create_table(
        "tenant_heads",
        sa.Column("tenant_id", sa.String(length=200), nullable=False),
        sa.Column("last_seq", sa.BigInteger(), nullable=False),
        sa.Column("last_hash", sa.String(length=80), nullable=True),
        sa.PrimaryKeyConstraint("tenant_id", name=op.f("pk_tenant_heads")),
    )


def downgrade() -> None:
    op.drop_table("tenant_heads")
    op.drop_index(op.f("ix_events_type"), table_name="events")
    op.drop_index(op.f("ix_events_tenant_id"), table_name="events")
    op.drop_index(op.f("ix_events_run_id"), table_name="events")
    op.drop_table("events")
    op.drop_table("artifacts_published")
