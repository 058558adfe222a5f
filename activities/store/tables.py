"""SQLAlchemy Core tables (one MetaData): the event log and everything stored beside it.

Events, the publish index, skills, capsules, schedules, tenants, API keys, idempotency records,
webhooks, tenant settings and run admissions.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Index,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB

__all__ = [
    "api_keys",
    "artifacts_published",
    "capsules",
    "events",
    "idempotency_records",
    "metadata",
    "run_admissions",
    "schedule_claims",
    "schedule_forces",
    "skills",
    "tenant_heads",
    "tenant_settings",
    "tenants",
    "webhooks",
]

# Explicit names make migrations and schema comparison identical on SQLite and PostgreSQL.
metadata = MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "pk": "pk_%(table_name)s",
    }
)

_JSON = JSON().with_variant(JSONB(), "postgresql")
_ID = 200  # matches EventDraft.event_id's max_length; other identifiers share the bound
_HASH = 80  # "sha256:" + 64 hex digits, with room to spare

events = Table(
    "events",
    metadata,
    Column("stream_id", String(_ID), nullable=False),
    Column("seq", Integer, nullable=False, autoincrement=False),
    Column("event_id", String(_ID), nullable=False),
    Column("type", String(_ID), nullable=False, index=True),
    Column("actor", _JSON, nullable=False),
    Column("tenant_id", String(_ID), nullable=False, index=True),
    Column("tenant_seq", BigInteger, nullable=False),
    Column("project_id", String(_ID), nullable=False),
    Column("run_id", String(_ID), nullable=True, index=True),
    Column("session_id", String(_ID), nullable=True),
    Column("caused_by", String(_ID), nullable=True),
    Column("timestamp", DateTime(timezone=True), nullable=False),
    Column("prompt_hash", String(_HASH), nullable=True),
    Column("payload", _JSON, nullable=False),
    Column("content_hash", String(_HASH), nullable=False),
    Column("prev_hash", String(_HASH), nullable=True),
    Column("signature", Text, nullable=True),
    PrimaryKeyConstraint("stream_id", "seq"),
    UniqueConstraint("event_id"),
    UniqueConstraint("tenant_id", "tenant_seq"),
)

# One row per tenant: locking it serializes appends to that tenant's hash chain.
tenant_heads = Table(
    "tenant_heads",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("last_hash", String(_HASH), nullable=True),
    PrimaryKeyConstraint("tenant_id"),
)

artifacts_published = Table(
    "artifacts_published",
    metadata,
    Column("run_id", String(_ID), nullable=False),
    Column("tenant_id", String(_ID), nullable=False, index=True),
    Column("path", String(1000), nullable=False),
    Column("version", Integer, nullable=False, autoincrement=False),
    Column("sha256", String(_HASH), nullable=False),
    Column("size_bytes", BigInteger, nullable=False),
    Column("media_type", String(_ID), nullable=True),
    Column("step_key", String(_ID), nullable=False),
    Column("contract_hash", String(_HASH), nullable=False),
    Column("provenance", _JSON, nullable=False),
    Column("published_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("run_id", "path", "version"),
    # Re-publishing the same bytes at the same path is the same publication, not a new version.
    UniqueConstraint("run_id", "path", "sha256"),
)

# The database skill registry: one row per registered version of a tenant's skill package.
skills = Table(
    "skills",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("skill_id", String(_ID), nullable=False),
    Column("version", Integer, nullable=False, autoincrement=False),
    Column("sha256", String(_HASH), nullable=False),
    Column("manifest", _JSON, nullable=False),  # the SkillPackage, as registered
    Column("files", _JSON, nullable=False),  # relative path -> ArtifactRef
    Column("deprecated", Boolean, nullable=False),
    Column("registered_at", DateTime(timezone=True), nullable=False),
    Column("registered_by", String(_ID), nullable=False),
    PrimaryKeyConstraint("tenant_id", "skill_id", "version"),
)

# Capsules: one row per immutable version of a tenant's capsule; its blobs are artifacts.
capsules = Table(
    "capsules",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("name", String(_ID), nullable=False),
    Column("version", Integer, nullable=False, autoincrement=False),
    Column("capsule_hash", String(_HASH), nullable=False),
    Column("content", _JSON, nullable=False),  # the CapsuleContent, dumped mode="json"
    Column("source_run_id", String(_ID), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", String(_ID), nullable=False),
    PrimaryKeyConstraint("tenant_id", "name", "version"),
    # The same content under the same name is that version, never a second one.
    UniqueConstraint("tenant_id", "name", "capsule_hash"),
)

# Schedule claims: one row per scheduled time of a tenant's schedule, held by the run that
# claimed it last; the primary key is what makes a second run of one time impossible.
schedule_claims = Table(
    "schedule_claims",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("schedule", String(_ID), nullable=False),
    Column("scheduled_at", DateTime(timezone=True), nullable=False),  # UTC
    Column("run_id", String(_ID), nullable=False),
    Column("attempt", Integer, nullable=False, autoincrement=False),
    Column("refused", Integer, nullable=False, autoincrement=False),
    Column("claimed_at", DateTime(timezone=True), nullable=False),
    Column("forced_by", String(_ID), nullable=True),  # the schedule_forces row it ran under
    PrimaryKeyConstraint("tenant_id", "schedule", "scheduled_at"),
)

# A forced backfill (`forge schedule backfill --force`): every time in [start_at, end_at] runs
# once more, even one that already ran; a claim made under it records its force_id.
schedule_forces = Table(
    "schedule_forces",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("schedule", String(_ID), nullable=False),
    Column("force_id", String(_ID), nullable=False),
    Column("start_at", DateTime(timezone=True), nullable=False),  # UTC
    Column("end_at", DateTime(timezone=True), nullable=False),  # UTC
    Column("actor", String(_ID), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("tenant_id", "schedule", "force_id"),
)

# Tenants: the isolation boundary (issue 19); a key or a request names one of these.
tenants = Table(
    "tenants",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", String(_ID), nullable=False),
    PrimaryKeyConstraint("tenant_id"),
)

# API keys: one row per key, holding the sha256 of its token, never the token.
api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(_ID), nullable=False),
    Column("tenant_id", String(_ID), nullable=False, index=True),
    Column("role", String(_ID), nullable=False),
    Column("actor", _JSON, nullable=False),
    Column("gate_roles", _JSON, nullable=False),
    Column("token_sha256", String(_HASH), nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("expires_at", DateTime(timezone=True), nullable=True),
    Column("revoked_at", DateTime(timezone=True), nullable=True),
    PrimaryKeyConstraint("key_id"),
)

# Idempotency-Key records: the first answer to a tenant's request under a key, replayed to a
# retry with the same body; `status` is null while the first request is still being answered.
idempotency_records = Table(
    "idempotency_records",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("idem_key", String(_ID), nullable=False),
    Column("request_sha256", String(_HASH), nullable=False),
    Column("status", Integer, nullable=True),
    Column("response", _JSON, nullable=True),
    Column("created_at", DateTime(timezone=True), nullable=False),
    PrimaryKeyConstraint("tenant_id", "idem_key"),
)

# A tenant's webhooks (secrets are derived, never stored). `cursor` is the tenant_seq of the
# last event the webhook has been handed; registration sets it to the tenant's head (no history).
webhooks = Table(
    "webhooks",
    metadata,
    Column("webhook_id", String(_ID), nullable=False),
    Column("tenant_id", String(_ID), nullable=False, index=True),
    Column("url", Text, nullable=False),
    Column("events", _JSON, nullable=False),
    Column("created_at", DateTime(timezone=True), nullable=False),
    Column("created_by", _JSON, nullable=False),
    Column("deleted_at", DateTime(timezone=True), nullable=True),
    Column("cursor", BigInteger, nullable=False),
    # The tenant's log head when it was registered: it hears events after it (0011; NULL before).
    Column("from_seq", BigInteger, nullable=True),
    PrimaryKeyConstraint("webhook_id"),
)

# A tenant's quotas (NULL: unlimited) and the input locations its runs may read; no row is a
# tenant with no quota and no input location of its own (activities/store/tenant_settings.py).
tenant_settings = Table(
    "tenant_settings",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("max_concurrent_runs", Integer, nullable=True),
    Column("max_tokens_per_day", BigInteger, nullable=True),
    Column("input_roots", _JSON, nullable=False),
    Column("input_buckets", _JSON, nullable=False),
    Column("updated_at", DateTime(timezone=True), nullable=False),
    Column("updated_by", String(_ID), nullable=False),
    PrimaryKeyConstraint("tenant_id"),
)

# One row per run admitted under its tenant's quota: live while ended_at is null; `day` (UTC,
# YYYY-MM-DD) is the quota day its token ceiling counts against until it ends with tokens_used.
run_admissions = Table(
    "run_admissions",
    metadata,
    Column("tenant_id", String(_ID), nullable=False),
    Column("run_id", String(_ID), nullable=False),
    Column("admitted_at", DateTime(timezone=True), nullable=False),
    Column("day", String(10), nullable=False),
    Column("token_ceiling", BigInteger, nullable=True),
    Column("ended_at", DateTime(timezone=True), nullable=True),
    Column("tokens_used", BigInteger, nullable=True),
    PrimaryKeyConstraint("tenant_id", "run_id"),
    Index("ix_run_admissions_tenant_id_ended_at", "tenant_id", "ended_at"),
    Index("ix_run_admissions_tenant_id_day", "tenant_id", "day"),
)
