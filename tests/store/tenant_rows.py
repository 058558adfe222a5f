"""A two-role PostgreSQL database per module, and a row in every table for a tenant.

`rls_database` is tests/store/postgres.py's `two_role_database` for a module. `seed_tenant`
writes through the stores, connected as the app role, at least one row of the tenant in every
table.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from activities.store.access import open_access_store
from activities.store.admissions import open_admissions
from activities.store.artifacts import LocalArtifactStore
from activities.store.capsules import open_capsule_store
from activities.store.events import open_event_store
from activities.store.idempotency import open_idempotency_store
from activities.store.schedule_claims import open_schedule_claims
from activities.store.skills_registry import open_skill_registry
from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from activities.store.webhooks import open_webhook_store
from schemas.artifacts import ArtifactRef, Provenance
from schemas.events import EventDraft
from schemas.scope import Actor, Scope
from tests.store.capsules import build_capsule
from tests.store.postgres import PostgresServer, RlsDatabase, two_role_database
from tests.store.test_skill_registry import write_package

ADMIN = Actor(id="admin", name="Admin", role="admin", kind="system")
T0 = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def rls_database(postgres_server: PostgresServer) -> Iterator[RlsDatabase]:
    """A two-role database for the module."""
    with two_role_database(postgres_server) as db:
        yield db


def seed_tenant(url: str, tenant: str, work: Path) -> str:
    """Write a row of `tenant` into every table through the stores at `url`; returns a token."""
    scope = Scope.of_tenant(tenant)
    artifacts = LocalArtifactStore(work / "artifacts")
    with open_access_store(url) as access:
        access.create_tenant(tenant, "admin")
        token = access.create_key(tenant, "admin", ADMIN).token
    run = f"run-{tenant}"
    with open_event_store(url) as events:
        events.append(
            [
                EventDraft(
                    event_id=f"{tenant}:root",
                    type="run.started.v1",
                    tenant_id=tenant,
                    run_id=run,
                    caused_by=None,
                    timestamp=T0,
                    payload={},
                )
            ],
            stream_id=f"run:{run}",
        )
        digest = "sha256:" + "a" * 64
        ref = ArtifactRef(artifact_id=digest, path="out.csv", sha256=digest, size_bytes=1)
        prov = Provenance(run_id=run, step_key="s0", contract_hash="sha256:" + "c" * 64)
        events.publish_and_append(
            [(ref, prov)],
            lambda _: [
                EventDraft(
                    event_id=f"{tenant}:done",
                    type="step.completed.v1",
                    tenant_id=tenant,
                    run_id=run,
                    caused_by=f"{tenant}:root",
                    timestamp=T0,
                    payload={},
                )
            ],
            stream_id=f"run:{run}",
            tenant_id=tenant,
        )
    with open_skill_registry(url, artifacts) as registry:
        registry.register(write_package(work / tenant), tenant_id=tenant, actor="admin")
    with open_capsule_store(url, artifacts) as capsules:
        capsules.add(scope, "totals", build_capsule(artifacts, scope), actor="admin")
    with open_schedule_claims(url) as claims:
        claims.claim(scope, "nightly", T0, run)
        claims.allow_rerun(scope, "nightly", T0, T0)
    idempotency = open_idempotency_store(url)
    try:
        idempotency.begin(tenant, "key-1", "sha256:" + "b" * 64)
    finally:
        idempotency.close()
    with open_webhook_store(url) as hooks:
        hooks.create(tenant, "https://hooks.example.com/forge", ["run.failed.v1"], ADMIN)
    with open_tenant_settings(url) as tenant_settings:
        change = SettingsChange(max_concurrent_runs=2, add_buckets=(f"{tenant}-inputs/in/",))
        tenant_settings.update(tenant, change, actor="admin")
    with open_admissions(url) as admissions:  # the quota above makes the run admitted
        admissions.admit(tenant, run, None, T0)
    return token
