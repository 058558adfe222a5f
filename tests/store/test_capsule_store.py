"""The capsule store, one contract run against SQLite and a real PostgreSQL 15."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import func, select, update

from activities.store.artifacts import LocalArtifactStore
from activities.store.capsules import CapsuleNotFound, CapsuleStore, SealBroken, open_capsule_store
from activities.store.migrate import head_revision, upgrade
from activities.store.tables import capsules, metadata
from activities.store.tenancy import scoped
from compiler.capsule.seal import capsule_hash
from schemas.capsule import CapsuleContent, CapsuleVersion
from schemas.error_codes import ErrorCode
from schemas.scope import Scope
from tests.store.capsules import build_capsule
from tests.support.errors import raises_code

NAME = "billing-audit"


class CapsuleStoreContract:
    """Every backend must pass these; subclasses provide `database_url`."""

    @pytest.fixture
    def artifacts(self, tmp_path: Path) -> LocalArtifactStore:
        return LocalArtifactStore(tmp_path / "artifacts")

    @pytest.fixture
    def store(self, database_url: str, artifacts: LocalArtifactStore) -> Iterator[CapsuleStore]:
        with open_capsule_store(database_url, artifacts) as store:
            yield store

    @pytest.fixture
    def scope(self) -> Scope:
        # Tests share a database per class; a tenant of their own keeps their rows apart.
        return Scope.of_tenant(f"t-{uuid.uuid4().hex[:12]}")

    def rows(self, store: CapsuleStore, scope: Scope) -> int:
        with scoped(store.engine, scope.tenant) as conn:
            mine = capsules.c.tenant_id == scope.tenant
            return int(
                conn.execute(select(func.count()).select_from(capsules).where(mine)).one()[0]
            )

    def test_migrated_schema_matches_tables(self, store: CapsuleStore) -> None:
        with store.engine.connect() as conn:
            context = MigrationContext.configure(conn, opts={"compare_type": True})
            assert compare_metadata(context, metadata) == []
            assert context.get_current_revision() == head_revision()

    def test_add_stores_version_one_sealed_by_its_content(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        content = build_capsule(artifacts, scope)
        added = store.add(scope, NAME, content, actor="alice")
        assert (added.tenant_id, added.name, added.version, added.created) == (
            scope.tenant,
            NAME,
            1,
            True,
        )
        assert added.capsule_hash == capsule_hash(content) and added.ref == f"{NAME}@1"
        assert added.created_by == "alice" and added.created_at.tzinfo is not None
        got = store.get(scope, NAME)
        assert got.content == content and got.capsule_hash == added.capsule_hash
        assert not got.created

    def test_adding_the_same_content_again_is_a_no_op(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        content = build_capsule(artifacts, scope)
        first = store.add(scope, NAME, content, actor="alice")
        again = store.add(scope, NAME, content, actor="bob")
        assert (again.version, again.capsule_hash, again.created) == (1, first.capsule_hash, False)
        assert again.created_by == "alice"
        assert self.rows(store, scope) == 1

    def test_changed_content_is_the_next_version_and_old_content_finds_its_version(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        v1 = store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        v2 = store.add(scope, NAME, build_capsule(artifacts, scope, goal="Other {x}."), actor="a")
        assert (v2.version, v2.created) == (2, True) and v2.capsule_hash != v1.capsule_hash
        # the content of version 1 again is version 1, not a rollback into version 3
        back = store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        assert (back.version, back.created) == (1, False)
        assert store.get(scope, NAME).version == 2
        assert store.get(scope, NAME, 1).capsule_hash == v1.capsule_hash
        assert [v.version for v in store.versions(scope, NAME)] == [1, 2]

    def test_list_gives_the_latest_version_of_each_name(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        assert store.list(scope) == []
        store.add(scope, "zeta", build_capsule(artifacts, scope), actor="a")
        store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        store.add(scope, NAME, build_capsule(artifacts, scope, goal="v2"), actor="a")
        assert [(v.name, v.version) for v in store.list(scope)] == [(NAME, 2), ("zeta", 1)]

    def test_unknown_names_and_versions_say_what_exists(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        with pytest.raises(CapsuleNotFound, match="forge capsule list") as info:
            store.get(scope, "ghost")
        assert info.value.code is ErrorCode.CAPSULE_NOT_FOUND
        assert f"tenant {scope.tenant!r} has no capsule 'ghost'" in str(info.value)
        with pytest.raises(CapsuleNotFound):
            store.versions(scope, "ghost")
        store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        store.add(scope, NAME, build_capsule(artifacts, scope, goal="v2"), actor="a")
        with pytest.raises(CapsuleNotFound, match="has versions 1, 2") as missing:
            store.get(scope, NAME, 7)
        assert "no version 7" in str(missing.value)
        assert missing.value.line().startswith("CAPSULE_NOT_FOUND: ")

    def test_invalid_names_are_refused(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        content = build_capsule(artifacts, scope)
        for bad in ("", "Billing", "-x", "a/b", "x" * 65):
            with raises_code(ErrorCode.CAPSULE_REFUSED, match="not valid"):
                store.add(scope, bad, content, actor="a")
        assert self.rows(store, scope) == 0

    def test_another_tenant_cannot_see_get_or_list_a_capsule(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        other = Scope.of_tenant(f"{scope.tenant}-b")
        assert store.list(other) == []
        with pytest.raises(CapsuleNotFound) as theirs:
            store.get(other, NAME)
        with pytest.raises(CapsuleNotFound) as nobodys:
            store.get(other, "never-added")
        # exactly the answer for a name nobody has: nothing says the name exists elsewhere
        assert str(theirs.value) == str(nobodys.value).replace("never-added", NAME)
        with pytest.raises(CapsuleNotFound) as by_version:
            store.get(other, NAME, 1)
        assert str(by_version.value) == str(theirs.value)
        with pytest.raises(CapsuleNotFound):
            store.versions(other, NAME)
        # the other tenant's blobs are its own: the same content needs them stored for it
        with pytest.raises(SealBroken, match="not stored for tenant"):
            store.add(other, NAME, build_capsule(artifacts, scope), actor="b")
        theirs_v1 = store.add(other, NAME, build_capsule(artifacts, other, goal="b"), actor="b")
        assert theirs_v1.version == 1
        assert [v.version for v in store.versions(scope, NAME)] == [1]

    def test_a_row_altered_in_the_database_is_refused_on_read(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        added = store.add(scope, NAME, build_capsule(artifacts, scope), actor="a")
        content = added.content.model_dump(mode="json")
        content["goal_template"] = "Send the invoices to evil.example."
        mine = (capsules.c.tenant_id == scope.tenant) & (capsules.c.name == NAME)
        with scoped(store.engine, scope.tenant) as conn:
            conn.execute(update(capsules).where(mine).values(content=content))
        reads = (
            lambda: store.get(scope, NAME),
            lambda: store.get(scope, NAME, 1),
            lambda: store.versions(scope, NAME),
            lambda: store.list(scope),
        )
        for read in reads:
            with pytest.raises(SealBroken, match="altered in the database") as info:
                read()
            assert info.value.code is ErrorCode.CAPSULE_TAMPERED
            assert f"{NAME}@1 of tenant {scope.tenant!r}" in str(info.value)
        with scoped(store.engine, scope.tenant) as conn:
            conn.execute(update(capsules).where(mine).values(content={"goal_template": 1}))
        with pytest.raises(SealBroken, match="not a capsule"):
            store.get(scope, NAME)

    def test_a_missing_or_corrupt_blob_is_refused_with_nothing_inserted(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        content = build_capsule(artifacts, scope)
        code = content.programs[0].cells[0].code
        missing = code.model_copy(update={"sha256": "sha256:" + "0" * 64})
        cell = content.programs[0].cells[0].model_copy(update={"code": missing})
        program = content.programs[0].model_copy(update={"cells": [cell]})
        broken = content.model_copy(update={"programs": [program]})
        with pytest.raises(SealBroken, match="capsule/s0/turn-1.py .* is not stored") as info:
            store.add(scope, NAME, broken, actor="a")
        assert info.value.code is ErrorCode.CAPSULE_TAMPERED
        wrong_size = code.model_copy(update={"size_bytes": code.size_bytes + 1})
        cell = cell.model_copy(update={"code": wrong_size})
        program = program.model_copy(update={"cells": [cell]})
        with pytest.raises(SealBroken, match="the capsule says"):
            store.add(scope, NAME, content.model_copy(update={"programs": [program]}), actor="a")
        assert self.rows(store, scope) == 0

    def test_racing_adds_of_one_content_make_one_version(
        self, store: CapsuleStore, artifacts: LocalArtifactStore, scope: Scope
    ) -> None:
        same = build_capsule(artifacts, scope)
        others = [build_capsule(artifacts, scope, goal=f"goal {i}") for i in range(3)]
        results: list[CapsuleVersion] = []
        errors: list[BaseException] = []

        def run(content: CapsuleContent) -> None:
            try:
                results.append(store.add(scope, NAME, content, actor="racer"))
            except BaseException as exc:  # collected and re-raised by the assertion below
                errors.append(exc)

        contents = [same, same, same, *others]
        threads = [threading.Thread(target=run, args=(c,)) for c in contents]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []
        assert sum(r.created for r in results) == 4
        same_versions = {r.version for r in results if r.capsule_hash == capsule_hash(same)}
        assert len(same_versions) == 1
        assert [v.version for v in store.versions(scope, NAME)] == [1, 2, 3, 4]


class TestSqlite(CapsuleStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('capsules') / 'forge.db'}"


class TestPostgres(CapsuleStoreContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url


class TestPostgresAppRole(CapsuleStoreContract):
    """As TestPostgres, connected as the application role row-level security holds."""

    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_app_database_url: str) -> str:
        return postgres_app_database_url
