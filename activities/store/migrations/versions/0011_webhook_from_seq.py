"""A webhook records the tenant's log position at its registration (issue 35 §3).

`cursor` moves as the dispatcher hands events on; `from_seq` stays: the tenant_seq of the last
event before the webhook existed. A webhook hears the events after it, whatever their
timestamps say (a writer stamps an event a moment before the log takes it). Webhooks
registered before this revision have none recorded (NULL).

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-28
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0011"
down_revision: str | None = "0010"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.add_column("webhooks", sa.Column("from_seq", sa.BigInteger(), nullable=True))


def downgrade() -> None:
    op.drop_column("webhooks", "from_seq")
