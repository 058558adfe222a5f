"""The type library rejects bad packs at load, naming the file and field; overlays override."""

from pathlib import Path

import pytest
import yaml

from activities.compile.typelib import STDLIB_DIR, load_library, pack_documents
from compiler.errors import PackError
from compiler.typesystem.library import LibraryDocument, build_library


def _stdlib_docs() -> list[LibraryDocument]:
    return pack_documents(STDLIB_DIR)


def _problems(extra: list[LibraryDocument]) -> list[tuple[str, str, str]]:
    with pytest.raises(PackError) as err:
        build_library([*_stdlib_docs(), *extra])
    return err.value.problems


def _domain(**over):
    doc = yaml.safe_load((STDLIB_DIR / "domains" / "billing-audit.yaml").read_text())
    doc.update(
        domain_pack_id="claims",
        entity_schemas=[
            {
                "entity_schema_id": "claims.claim",
                "title": "Claim",
                "description": "d",
                "key_fields": ["claim_id"],
                "json_schema": {"type": "object", "properties": {"claim_id": {"type": "string"}}},
            }
        ],
        canonical_profiles=[],
        synonyms={},
        disambiguation=[],
    )
    doc.update(over)
    return LibraryDocument(source="custom/domains/claims.yaml", category="domain", content=doc)


def test_stdlib_loads_with_every_part():
    lib = load_library()
    assert (len(lib.kinds), len(lib.slots), len(lib.policies)) == (24, 15, 5)
    assert (len(lib.domain_packs), len(lib.workflow_packs), len(lib.adapters)) == (12, 12, 5)
    assert all(a.code_sha256 and a.code_sha256.startswith("sha256:") for a in lib.adapters.values())


@pytest.mark.parametrize(
    ("over", "field", "words"),
    [
        (
            {
                "entity_schemas": [
                    {
                        "entity_schema_id": "Claims-Claim",
                        "title": "t",
                        "description": "d",
                        "json_schema": {"type": "object"},
                    }
                ]
            },
            "entity_schemas[0].entity_schema_id",
            "<domain>.<entity>",
        ),
        (
            {
                "canonical_profiles": [
                    {
                        "profile_id": "claims.claims.v1",
                        "entity_schema_id": "claims.claim",
                        "kind_key": "table.csv",
                        "grain": "row",
                    }
                ]
            },
            "canonical_profiles[0]",
            "<scope>.<kind_key>.<semantic_name>.v<major>",
        ),
        (
            {
                "canonical_profiles": [
                    {
                        "profile_id": "claims.table.tsv.claims.v1",
                        "entity_schema_id": "claims.claim",
                        "kind_key": "table.csv",
                        "grain": "row",
                    }
                ]
            },
            "canonical_profiles[0]",
            "embeds kind",
        ),
        (
            {
                "canonical_profiles": [
                    {
                        "profile_id": "claims.table.xml.claims.v1",
                        "entity_schema_id": "claims.claim",
                        "kind_key": "table.xml",
                        "grain": "row",
                    }
                ]
            },
            "canonical_profiles[0].kind_key",
            "unknown kind",
        ),
        (
            {"default_policy_profile_id": "lenient.v1"},
            "default_policy_profile_id",
            "unknown policy",
        ),
        ({"synonyms": {"cid": "customer"}}, "synonyms.cid", "in no entity"),
        (
            {
                "entity_schemas": [
                    {
                        "entity_schema_id": "claims.claim",
                        "title": "t",
                        "description": "d",
                        "json_schema": {"type": "objekt"},
                    }
                ]
            },
            "entity_schemas[0].json_schema",
            "not a valid JSON Schema",
        ),
        ({"triggers": []}, "triggers", "at least 1"),
        (
            {
                "entity_schemas": [
                    {
                        "entity_schema_id": "claims.claim",
                        "title": "t",
                        "description": "d",
                        "json_schema": {"type": "object"},
                        "rules": [
                            {"rule_id": "r", "message": "m", "logic": {"frobnicate": [1, 2]}}
                        ],
                    }
                ]
            },
            "entity_schemas[0].rules[0].logic",
            "unknown JsonLogic operator 'frobnicate'",
        ),
    ],
)
def test_bad_domain_pack_names_file_and_field(over, field, words):
    problems = _problems([_domain(**over)])
    assert any(
        src == "custom/domains/claims.yaml" and f == field and words in msg
        for src, f, msg in problems
    ), problems


def test_workflow_pack_with_unknown_slot_and_adapter_with_unknown_kind():
    wf = yaml.safe_load((STDLIB_DIR / "workflows" / "render-report.yaml").read_text())
    wf.update(
        workflow_pack_id="render-claims",
        typical_slots={"inputs": ["claims"], "outputs": []},
        disambiguation=[],
    )
    adapters = {
        "adapters": [
            {
                "adapter_id": "adapt.x",
                "from_kind": "table.csv",
                "to_kind": "table.xml",
                "description": "d",
                "module": "m",
            }
        ]
    }
    problems = _problems(
        [
            LibraryDocument(
                source="c/workflows/render-claims.yaml", category="workflow", content=wf
            ),
            LibraryDocument(
                source="c/adapters/adapters.yaml", category="adapters", content=adapters
            ),
        ]
    )
    assert (
        "c/workflows/render-claims.yaml",
        "typical_slots.inputs",
        "unknown slot 'claims'",
    ) in problems
    assert any(f == "adapt.x.to_kind" and "table.xml" in m for _, f, m in problems)


def test_bad_kind_key_is_rejected():
    kinds = {
        "artifact_kinds": [
            {
                "kind_key": "Table",
                "family": "Table",
                "representation": "x",
                "format": "csv",
                "media_type": "text/csv",
                "extensions": [".x"],
                "parse_validator": "csv",
                "description": "d",
            }
        ]
    }
    problems = _problems([LibraryDocument(source="c/kinds.yaml", category="kinds", content=kinds)])
    assert any(f == "kind_key" and "<family>.<representation>" in m for _, f, m in problems)


def test_yaml_syntax_error_names_line(tmp_path: Path):
    (tmp_path / "domains").mkdir()
    (tmp_path / "domains" / "bad.yaml").write_text("domain_pack_id: x\ntriggers: [a, b\n")
    with pytest.raises(PackError) as err:
        pack_documents(tmp_path)
    [(source, where, message)] = err.value.problems
    assert source.endswith("domains/bad.yaml") and where.startswith("line ")
    assert "invalid YAML" in message


def test_same_id_twice_in_one_directory_is_an_error_across_directories_an_override():
    twice = _problems([_domain(), _domain()])
    assert any("also defined" in m for _, _, m in twice)
    billing = yaml.safe_load((STDLIB_DIR / "domains" / "billing-audit.yaml").read_text())
    billing["purpose"] = "Our own billing audit."
    lib = build_library(
        [
            *_stdlib_docs(),
            LibraryDocument(
                source="org/packs/domains/billing-audit.yaml", category="domain", content=billing
            ),
        ]
    )
    assert lib.domain_packs["billing-audit"].purpose == "Our own billing audit."
    assert any("overrides" in note for note in lib.overrides)


def test_missing_adapter_module_is_named(tmp_path: Path):
    (tmp_path / "adapters").mkdir()
    (tmp_path / "adapters" / "adapters.yaml").write_text(
        yaml.safe_dump(
            {
                "adapters": [
                    {
                        "adapter_id": "adapt.a",
                        "from_kind": "table.csv",
                        "to_kind": "table.tsv",
                        "description": "d",
                        "module": "nowhere",
                    }
                ]
            }
        )
    )
    with pytest.raises(PackError) as err:
        pack_documents(tmp_path)
    assert any(f == "adapters[0].module" and "nowhere.py" in m for _, f, m in err.value.problems)
