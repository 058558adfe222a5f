"""Tenants in the artifact store, seen from the other tenant's side, on every backend.

A read takes the reader's Scope and finds only what that tenant stored: another tenant's
digest is a miss that reads exactly like a digest nobody stored.
"""

from __future__ import annotations

import abc
import hashlib
import json
import os
from pathlib import Path

import pytest

from activities.models.prompts import PromptStore
from activities.steps.plans import CompiledPlans
from activities.store.artifacts import ArtifactStore, LocalArtifactStore
from activities.store.artifacts_s3 import S3ArtifactStore
from activities.store.errors import ArtifactCorrupt, ArtifactNotFound
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from schemas.artifacts import ArtifactRef
from schemas.error_codes import ErrorCode
from schemas.events import Actor
from schemas.models import Message, ModelRequest, TextBlock
from schemas.scope import Scope
from tests.compiler.conftest import make_ctx
from tests.store.s3 import new_s3_store
from tests.support.errors import raises_code

DATA = b"invoice,amount\nA-1,12.50\n"
DIGEST = "sha256:" + hashlib.sha256(DATA).hexdigest()
ACME = Scope(tenant="acme", project="billing")
GLOBEX = Scope(tenant="globex", project="billing")
DEFAULT = Scope.default()
ALICE = Actor(id="alice", name="Alice", role="analyst", kind="human")


def _miss(store: ArtifactStore, scope: Scope, sha256: str, dest: Path) -> str:
    """The message of every read of `sha256` in `scope`, which must all miss the same way."""
    assert not store.exists(scope, sha256)
    with pytest.raises(ArtifactNotFound) as by_read:
        store.read_bytes(scope, sha256, 1 << 20)
    with pytest.raises(ArtifactNotFound) as by_copy:
        store.get_to_file(scope, sha256, dest)
    assert str(by_read.value) == str(by_copy.value)
    assert not dest.exists()
    return str(by_read.value)


class TenancyContract(abc.ABC):
    """Every backend keeps tenants apart; subclasses provide `store`, `blob_key` and `tamper`."""

    @abc.abstractmethod
    def blob_key(self, store: ArtifactStore, scope: Scope, sha256: str) -> str:
        """The backend's key of the blob `sha256` in `scope`; raises when it is not stored."""

    @abc.abstractmethod
    def tamper(self, store: ArtifactStore, scope: Scope, sha256: str, data: bytes) -> None:
        """Overwrite the stored blob behind the store's back."""

    def test_written_as_a_read_as_b_is_refused(self, store: ArtifactStore, tmp_path: Path) -> None:
        ref = store.put_bytes(ACME, DATA, logical_path="input/a.csv")
        message = _miss(store, GLOBEX, ref.sha256, tmp_path / "stolen.csv")
        assert "globex" in message and "acme" not in message
        # The refusal says no more than a miss of content nobody stored.
        nobody = "sha256:" + "0" * 64
        unknown = _miss(store, GLOBEX, nobody, tmp_path / "none.csv")
        assert message.replace(ref.sha256.removeprefix("sha256:"), "X") == unknown.replace(
            "0" * 64, "X"
        )
        _miss(store, DEFAULT, ref.sha256, tmp_path / "default.csv")  # default is a tenant too

    def test_written_as_a_read_as_a(self, store: ArtifactStore, tmp_path: Path) -> None:
        ref = store.put_bytes(ACME, DATA, logical_path="input/a.csv")
        assert store.exists(ACME, ref.sha256)
        assert store.read_bytes(ACME, ref.sha256, 1000) == DATA
        store.get_to_file(ACME, ref.sha256, tmp_path / "a.csv")
        assert (tmp_path / "a.csv").read_bytes() == DATA

    def test_project_and_actor_do_not_partition_a_tenant(self, store: ArtifactStore) -> None:
        ref = store.put_bytes(ACME.acting(ALICE), DATA, logical_path="a.csv")
        other_project = Scope(tenant="acme", project="audit")
        assert store.read_bytes(other_project, ref.sha256, 1000) == DATA

    def test_same_content_by_both_tenants(self, store: ArtifactStore, tmp_path: Path) -> None:
        source = tmp_path / "same.csv"
        source.write_bytes(DATA)
        a = store.put_file(ACME, source, logical_path="input/a.csv")
        b = store.put_bytes(GLOBEX, DATA, logical_path="input/b.csv")
        assert a.sha256 == b.sha256 == DIGEST
        assert store.read_bytes(ACME, DIGEST, 1000) == DATA
        assert store.read_bytes(GLOBEX, DIGEST, 1000) == DATA
        # Two copies: B's put did not lean on A's, and damage to one leaves the other whole.
        assert self.blob_key(store, ACME, DIGEST) != self.blob_key(store, GLOBEX, DIGEST)
        self.tamper(store, ACME, DIGEST, b"tampered")
        with pytest.raises(ArtifactCorrupt):
            store.read_bytes(ACME, DIGEST, 1000)
        assert store.read_bytes(GLOBEX, DIGEST, 1000) == DATA

    def test_tenant_layout(self, store: ArtifactStore) -> None:
        digest = DIGEST.removeprefix("sha256:")
        store.put_bytes(ACME, DATA, logical_path="a.csv")
        store.put_bytes(DEFAULT, DATA, logical_path="a.csv")
        assert self.blob_key(store, ACME, DIGEST).endswith(
            f"tenants/acme/sha256/{digest[:2]}/{digest[2:]}"
        )
        # The default tenant keeps the layout from before tenants: stored blobs stay readable.
        default_key = self.blob_key(store, DEFAULT, DIGEST)
        assert default_key.endswith(f"sha256/{digest[:2]}/{digest[2:]}")
        assert "tenants/" not in default_key


class TestLocalTenancy(TenancyContract):
    @pytest.fixture
    def store(self, tmp_path_factory: pytest.TempPathFactory) -> ArtifactStore:
        return LocalArtifactStore(tmp_path_factory.mktemp("artifacts"))

    def blob_key(self, store: ArtifactStore, scope: Scope, sha256: str) -> str:
        assert isinstance(store, LocalArtifactStore)
        path = store._blob_path(scope, sha256.removeprefix("sha256:"))
        assert path.is_file()
        return path.relative_to(store.root).as_posix()

    def tamper(self, store: ArtifactStore, scope: Scope, sha256: str, data: bytes) -> None:
        assert isinstance(store, LocalArtifactStore)
        blob = store.root / self.blob_key(store, scope, sha256)
        blob.chmod(0o644)
        blob.write_bytes(data)

    def test_a_blob_stored_before_tenants_is_the_default_tenants(
        self, store: ArtifactStore, tmp_path: Path
    ) -> None:
        assert isinstance(store, LocalArtifactStore)
        digest = DIGEST.removeprefix("sha256:")
        legacy = store.root / "sha256" / digest[:2] / digest[2:]  # written by an older Forge
        legacy.parent.mkdir(parents=True)
        legacy.write_bytes(DATA)
        assert store.read_bytes(DEFAULT, DIGEST, 1000) == DATA
        _miss(store, ACME, DIGEST, tmp_path / "acme.csv")

    def test_a_new_tenants_directories_are_flushed(
        self, store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        flushed: list[int] = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd)))
        store.put_bytes(ACME, DATA, logical_path="a.csv")
        # The blob; then ab/, sha256/, acme/, tenants/ and the root, each holding a new entry.
        assert len(flushed) == 6


class TestS3Tenancy(TenancyContract):
    @pytest.fixture
    def store(self, moto_endpoint: str) -> S3ArtifactStore:
        return new_s3_store(moto_endpoint)

    def blob_key(self, store: ArtifactStore, scope: Scope, sha256: str) -> str:
        assert isinstance(store, S3ArtifactStore)
        key = store._key(scope, sha256.removeprefix("sha256:"))
        store._client.head_object(Bucket=store.bucket, Key=key)  # raises when absent
        return key

    def tamper(self, store: ArtifactStore, scope: Scope, sha256: str, data: bytes) -> None:
        assert isinstance(store, S3ArtifactStore)
        key = self.blob_key(store, scope, sha256)
        store._client.put_object(Bucket=store.bucket, Key=key, Body=data)


def test_compiled_plans_are_not_served_across_tenants(tmp_path: Path) -> None:
    """The worker's parsed-plan cache is keyed by tenant: no read around the store."""
    store = LocalArtifactStore(tmp_path)
    plan_file = Path(__file__).parents[2] / "examples" / "billing-audit" / "plan.json"
    compiled = compile_plan(parse_candidate(json.loads(plan_file.read_text())), ctx=make_ctx())
    raw = compiled.model_dump_json().encode()
    ref = store.put_bytes(ACME, raw, logical_path="meta/r/compiled_plan.json")
    plans = CompiledPlans(store)
    assert plans.get(ACME, ref) == compiled
    with pytest.raises(ArtifactNotFound):
        plans.get(GLOBEX, ref)


def test_prompts_are_per_tenant(tmp_path: Path) -> None:
    prompts = PromptStore(LocalArtifactStore(tmp_path))
    request = ModelRequest(
        model="scripted:test",
        consumer="planner",
        system="plan",
        max_tokens=10,
        messages=[Message(role="user", content=[TextBlock(text="hi")])],
    )
    digest, ref = prompts.put(ACME, request)
    assert isinstance(ref, ArtifactRef) and prompts.get(ACME, digest) == request
    with raises_code(ErrorCode.PROMPT_NOT_FOUND, match="globex"):
        prompts.get(GLOBEX, digest)
    again, _ = prompts.put(GLOBEX, request)  # stored for globex too: its own copy
    assert again == digest and prompts.get(GLOBEX, digest) == request
