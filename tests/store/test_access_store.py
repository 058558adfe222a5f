"""Tenants, API keys and idempotency records, on SQLite and a real PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text, update

from activities.store.access import AccessStore, open_access_store, token_key_id
from activities.store.idempotency import STALE, IdempotencyStore, open_idempotency_store
from activities.store.migrate import upgrade
from activities.store.tables import idempotency_records
from activities.store.tenancy import scoped
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Actor
from tests.support.errors import raises_code

BOT = Actor(id="bot", name="Bot", role="operator", kind="system")


class AccessContract:
    @pytest.fixture
    def access(self, database_url: str) -> Iterator[AccessStore]:
        store = open_access_store(database_url)
        yield store
        store.close()

    @pytest.fixture
    def idem(self, database_url: str) -> Iterator[IdempotencyStore]:
        store = open_idempotency_store(database_url)
        yield store
        store.close()

    def test_a_tenant_is_created_once_with_a_valid_id(self, access: AccessStore) -> None:
        access.create_tenant("t-create", "test")
        with raises_code(ErrorCode.TENANT_INVALID, match="exists already"):
            access.create_tenant("t-create", "test")
        with raises_code(ErrorCode.TENANT_INVALID, match="not valid"):
            access.create_tenant("Not Valid", "test")
        assert "t-create" in [t.tenant_id for t in access.tenants()]

    def test_a_key_is_shown_once_stored_hashed_and_authenticates(
        self, access: AccessStore, database_url: str
    ) -> None:
        access.create_tenant("t-keys", "test")
        issued = access.create_key("t-keys", "operator", BOT, gate_roles=["ops", "ops"])
        assert token_key_id(issued.token) == issued.key.key_id
        assert issued.token.startswith(issued.key.prefix + "_")
        key = access.authenticate(issued.token)
        assert (key.tenant_id, key.role, key.actor, key.gate_roles) == (
            "t-keys",
            "operator",
            BOT,
            ["ops"],
        )
        with scoped(access._engine, "t-keys") as conn:  # noqa: SLF001 - a database copy
            dump = " ".join(str(r) for r in conn.execute(text("SELECT * FROM api_keys")))
        secret = issued.token.split("_", 2)[2]  # url-safe base64: it may hold "_" itself
        assert issued.token not in dump and secret not in dump
        with raises_code(ErrorCode.UNAUTHENTICATED, match="not valid"):
            access.authenticate(issued.token[:-1] + ("A" if issued.token[-1] != "A" else "B"))
        with raises_code(ErrorCode.UNAUTHENTICATED, match="not a Forge API key"):
            access.authenticate("Bearer nonsense")
        with raises_code(ErrorCode.TENANT_INVALID, match="no tenant"):
            access.create_key("t-nobody", "viewer", BOT)

    def test_revoked_and_expired_keys_stop_and_another_tenant_cannot_revoke(
        self, access: AccessStore
    ) -> None:
        access.create_tenant("t-rev-a", "test")
        access.create_tenant("t-rev-b", "test")
        key = access.create_key("t-rev-a", "viewer", BOT)
        with raises_code(ErrorCode.NOT_FOUND):
            access.revoke("t-rev-b", key.key.key_id)
        access.authenticate(key.token)  # untouched by the other tenant's attempt
        revoked = access.revoke("t-rev-a", key.key.prefix)
        assert revoked.revoked_at is not None
        assert access.revoke("t-rev-a", key.key.key_id).revoked_at == revoked.revoked_at
        with raises_code(ErrorCode.UNAUTHENTICATED, match="revoked"):
            access.authenticate(key.token)
        soon = datetime.now(UTC) + timedelta(hours=1)
        expiring = access.create_key("t-rev-a", "viewer", BOT, expires_at=soon)
        access.authenticate(expiring.token)
        with raises_code(ErrorCode.UNAUTHENTICATED, match="expired"):
            access.authenticate(expiring.token, now=soon + timedelta(seconds=1))
        assert [k.key_id for k in access.keys("t-rev-b")] == []

    def test_idempotency_replays_refuses_another_request_and_releases_failures(
        self, idem: IdempotencyStore
    ) -> None:
        assert idem.begin("t-idem", "k1", "sha256:a") is None
        with raises_code(ErrorCode.IDEMPOTENCY_IN_PROGRESS):
            idem.begin("t-idem", "k1", "sha256:a")
        idem.finish("t-idem", "k1", 201, {"run_id": "r1"})
        stored = idem.begin("t-idem", "k1", "sha256:a")
        assert stored is not None and (stored.status, stored.body) == (201, {"run_id": "r1"})
        with raises_code(ErrorCode.IDEMPOTENCY_MISMATCH):
            idem.begin("t-idem", "k1", "sha256:b")
        assert idem.begin("t-other", "k1", "sha256:b") is None  # keys are per tenant
        assert idem.begin("t-idem", "k2", "sha256:a") is None
        idem.release("t-idem", "k2")  # the request failed: a corrected retry may use the key
        assert idem.begin("t-idem", "k2", "sha256:c") is None

    def test_an_abandoned_claim_is_taken_over_after_it_goes_stale(
        self, idem: IdempotencyStore
    ) -> None:
        assert idem.begin("t-stale", "k", "sha256:a") is None
        with scoped(idem._engine, "t-stale") as conn:  # noqa: SLF001 - its process died
            conn.execute(
                update(idempotency_records)
                .where(idempotency_records.c.tenant_id == "t-stale")
                .values(created_at=datetime.now(UTC) - STALE - timedelta(seconds=1))
            )
        assert idem.begin("t-stale", "k", "sha256:a") is None

    def test_racing_first_requests_under_one_key_let_exactly_one_through(
        self, idem: IdempotencyStore
    ) -> None:
        outcomes: list[str] = []

        def attempt() -> None:
            try:
                outcomes.append("first" if idem.begin("t-race", "k", "sha256:a") is None else "x")
            except ForgeError as exc:
                in_progress = exc.code is ErrorCode.IDEMPOTENCY_IN_PROGRESS
                outcomes.append("in progress" if in_progress else exc.code.name)

        threads = [threading.Thread(target=attempt) for _ in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert sorted(outcomes) == ["first"] + ["in progress"] * 5


class TestSqlite(AccessContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('access') / 'forge.db'}"


class TestPostgres(AccessContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url


class TestPostgresAppRole(AccessContract):
    """As TestPostgres, connected as the application role row-level security holds."""

    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_app_database_url: str) -> str:
        return postgres_app_database_url
