"""Validate the standard library pack data (seed 000 Part IV) against the type-system models."""

import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from schemas.typesystem import DomainPack, WorkflowPack

ROOT = Path(__file__).resolve().parents[2]
DOMAIN_DIR = ROOT / "stdlib" / "domains"
WORKFLOW_DIR = ROOT / "stdlib" / "workflows"

DOMAIN_SCOPES = {
    "research-synthesis": "research",
    "investigation-core": "investigation",
    "resume-audit": "resume",
    "billing-audit": "billing",
    "finance-analysis": "finance",
    "legal-review": "legal",
    "website-build": "website",
    "code-modification": "code",
    "data-merge-transform": "data",
    "sales-crm": "crm",
    "psa-capacity": "psa",
    "security-audit": "security",
}
WORKFLOW_IDS = {
    "file-acquisition",
    "file-batch-load",
    "ingest-materialize",
    "normalize-transform",
    "reconcile-compare",
    "analyze-score-rank",
    "research-fetch-summarize",
    "render-report",
    "render-website",
    "code-modification",
    "deploy-publish",
    "investigation-parallel",
}
KIND_KEYS = {
    "file.binary",
    "file.text",
    "file.archive.zip",
    "file.batch_manifest",
    "object.json",
    "object.yaml",
    "table.csv",
    "table.tsv",
    "table.json_rows",
    "table.parquet",
    "dataset.joined_rows",
    "dataset.aggregated_rows",
    "report.markdown",
    "report.html",
    "report.pdf",
    "web.page.html",
    "web.bundle.static",
    "web.asset_manifest",
    "deployment.receipt",
    "code.patch.unified_diff",
    "code.bundle.project",
    "validation.results",
    "evidence.json_rows",
    "citations.list",
}
SLOT_IDS = {
    "source_manifest",
    "raw_files",
    "batch_manifest",
    "document_spans",
    "normalized_rows",
    "joined_rows",
    "aggregated_rows",
    "findings",
    "scores",
    "report_artifact",
    "site_spec",
    "site_bundle",
    "deployment_receipt",
    "validation_results",
    "change_set",
}
GRAINS = {"row", "document", "file", "bundle", "summary"}
POLICY_IDS = {
    "strict.fail-closed.v1",
    "strict.allow-normalizers.v1",
    "generic.inference-allowed.v1",
    "provenance.required.v1",
    "deploy.human-review-required.v1",
}
REQUIRED_POLICIES = {
    "billing-audit": "strict.allow-normalizers.v1",
    "resume-audit": "strict.allow-normalizers.v1",
    "legal-review": "strict.fail-closed.v1",
    "finance-analysis": "strict.fail-closed.v1",
    "security-audit": "strict.fail-closed.v1",
    "research-synthesis": "provenance.required.v1",
    "investigation-core": "provenance.required.v1",
    "website-build": "deploy.human-review-required.v1",
}
# billing-audit carries the entities a runnable example depends on, so it may exceed 7.
MAX_ENTITIES = {"billing-audit": 10}

SNAKE = r"[a-z][a-z0-9]*(?:_[a-z0-9]+)*"
ENTITY_ID_RE = re.compile(rf"^({SNAKE})\.({SNAKE})$")
PROFILE_ID_RE = re.compile(
    rf"^(?P<scope>{SNAKE})\.(?P<rest>.+)\.(?P<name>{SNAKE})\.v(?P<major>\d+)$"
)
PHRASE_RE = re.compile(r"^[a-z0-9][a-z0-9 '&/-]*[a-z0-9]$")


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), f"{path.name} must hold one mapping"
    return data


DOMAIN_FILES = sorted(DOMAIN_DIR.glob("*.yaml"))
WORKFLOW_FILES = sorted(WORKFLOW_DIR.glob("*.yaml"))


def _domain(path: Path) -> DomainPack:
    return DomainPack.model_validate(_load(path))


def _workflow(path: Path) -> WorkflowPack:
    return WorkflowPack.model_validate(_load(path))


def _all_domains() -> list[DomainPack]:
    return [_domain(p) for p in DOMAIN_FILES]


# ------------------------------------------------------------------------ inventory


def test_domain_pack_ids_exact() -> None:
    assert {p.stem for p in DOMAIN_FILES} == set(DOMAIN_SCOPES)
    assert len(DOMAIN_FILES) == 12
    assert not list(DOMAIN_DIR.glob("*.yml"))


def test_workflow_pack_ids_exact() -> None:
    assert {p.stem for p in WORKFLOW_FILES} == WORKFLOW_IDS
    assert len(WORKFLOW_FILES) == 12
    assert not list(WORKFLOW_DIR.glob("*.yml"))


# ------------------------------------------------------------------------ shared checks


def _check_phrases(triggers: list[str], goals: list[str]) -> None:
    assert 4 <= len(triggers) <= 8
    assert len(set(triggers)) == len(triggers)
    for trig in triggers:
        assert trig == trig.lower() and PHRASE_RE.match(trig), trig
        # Seed-given triggers ("redlines", "indemnity") are single words; others are 2-4 words.
        assert 1 <= len(trig.split()) <= 4, trig
    assert len(goals) == 3
    for goal in goals:
        assert goal[0].isupper() and goal.rstrip()[-1] in ".!?", goal
        assert len(goal.split()) >= 6, goal


def _check_rules(pack_id: str, rules: list[Any], same_type_ids: set[str]) -> None:
    assert 1 <= len(rules) <= 3
    for rule in rules:
        assert rule.prefer == pack_id
        assert rule.text.strip()
        assert rule.over and set(rule.over) <= same_type_ids - {pack_id}, rule.over
        assert len(set(rule.over)) == len(rule.over)
        assert 2 <= len(rule.when_any) <= 6
        for term in rule.when_any:
            assert term == term.lower() and term.strip() == term and term, term
            assert len(term.split()) <= 4, term


# ------------------------------------------------------------------------ domain packs


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.stem)
def test_domain_pack_valid(path: Path) -> None:
    pack = _domain(path)
    assert pack.domain_pack_id == path.stem
    assert pack.title.strip() and pack.purpose.strip()
    assert pack.default_policy_profile_id in POLICY_IDS
    if pack.domain_pack_id in REQUIRED_POLICIES:
        assert pack.default_policy_profile_id == REQUIRED_POLICIES[pack.domain_pack_id]
    _check_phrases(pack.triggers, pack.example_goals)
    _check_rules(pack.domain_pack_id, pack.disambiguation, set(DOMAIN_SCOPES))


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.stem)
def test_domain_entities(path: Path) -> None:
    pack = _domain(path)
    scope = DOMAIN_SCOPES[pack.domain_pack_id]
    assert 3 <= len(pack.entity_schemas) <= MAX_ENTITIES.get(pack.domain_pack_id, 7)
    ids = [e.entity_schema_id for e in pack.entity_schemas]
    assert len(set(ids)) == len(ids)
    for ent in pack.entity_schemas:
        match = ENTITY_ID_RE.match(ent.entity_schema_id)
        assert match, ent.entity_schema_id
        assert match.group(1) == scope, ent.entity_schema_id
        assert ent.title.strip() and ent.description.strip()
        schema = ent.json_schema
        Draft202012Validator.check_schema(schema)
        assert schema["type"] == "object"
        props = schema["properties"]
        assert isinstance(props, dict) and len(props) >= 3
        required = schema["required"]
        assert isinstance(required, list) and required
        assert set(required) <= set(props)
        assert schema.get("additionalProperties") is True
        assert ent.key_fields and set(ent.key_fields) <= set(props)
        for name, prop in props.items():
            assert re.fullmatch(SNAKE, name), name
            assert isinstance(prop, dict) and prop, name


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.stem)
def test_domain_profiles(path: Path) -> None:
    pack = _domain(path)
    scope = DOMAIN_SCOPES[pack.domain_pack_id]
    entity_ids = {e.entity_schema_id for e in pack.entity_schemas}
    assert 2 <= len(pack.canonical_profiles) <= 5
    for prof in pack.canonical_profiles:
        match = PROFILE_ID_RE.match(prof.profile_id)
        assert match, prof.profile_id
        assert match.group("scope") == scope
        assert match.group("rest") == prof.kind_key, prof.profile_id
        assert prof.kind_key in KIND_KEYS
        assert prof.entity_schema_id in entity_ids
        assert prof.grain in GRAINS


@pytest.mark.parametrize("path", DOMAIN_FILES, ids=lambda p: p.stem)
def test_domain_synonyms(path: Path) -> None:
    pack = _domain(path)
    fields: set[str] = set()
    for ent in pack.entity_schemas:
        fields |= set(ent.json_schema["properties"])
    assert 4 <= len(pack.synonyms) <= 10
    for alias, canonical in pack.synonyms.items():
        assert re.fullmatch(SNAKE, alias), alias
        assert alias != canonical
        assert canonical in fields, f"{alias} -> {canonical}"


def test_profile_ids_globally_unique() -> None:
    seen: set[str] = set()
    for pack in _all_domains():
        for prof in pack.canonical_profiles:
            assert prof.profile_id not in seen
            seen.add(prof.profile_id)


def test_entity_scopes_distinct_per_domain() -> None:
    owner: dict[str, str] = {}
    for pack in _all_domains():
        for ent in pack.entity_schemas:
            scope = ent.entity_schema_id.split(".")[0]
            assert owner.setdefault(scope, pack.domain_pack_id) == pack.domain_pack_id


# ------------------------------------------------------------------------ billing-audit contract

BILLING_ENTITIES = {
    "billing.time_entry": {
        "entry_id",
        "consultant_id",
        "client_id",
        "project_id",
        "work_date",
        "hours",
        "billable",
        "description",
        "rate_code",
    },
    "billing.rate_card": {
        "rate_code",
        "consultant_id",
        "client_id",
        "hourly_rate",
        "currency",
        "effective_from",
        "effective_to",
    },
    "billing.contract": {
        "contract_id",
        "client_id",
        "cap_hours",
        "cap_amount",
        "discount_pct",
        "start_date",
        "end_date",
    },
    "billing.schema_profile": {"source", "columns", "row_count", "candidate_keys"},
    "billing.contract_applicability": {
        "entry_id",
        "contract_id",
        "applicable_rate",
        "discount_pct",
        "cap_remaining",
    },
    "billing.discrepancy_row": {
        "discrepancy_id",
        "entry_id",
        "kind",
        "expected_amount",
        "billed_amount",
        "delta",
    },
    "billing.exception_summary": {"kind", "count", "total_delta"},
    "billing.correction_candidate": {
        "entry_id",
        "field",
        "current_value",
        "proposed_value",
        "reason",
    },
}
DISCREPANCY_KINDS = {
    "rate_mismatch",
    "over_cap",
    "missing_rate",
    "duplicate_entry",
    "non_billable_billed",
    "discount_missing",
}


def test_billing_audit_required_entities() -> None:
    pack = _domain(DOMAIN_DIR / "billing-audit.yaml")
    by_id = {e.entity_schema_id: e.json_schema for e in pack.entity_schemas}
    for eid, fields in BILLING_ENTITIES.items():
        assert eid in by_id, eid
        assert fields <= set(by_id[eid]["properties"]), eid
    te = by_id["billing.time_entry"]["properties"]
    assert te["work_date"] == {"type": "string", "format": "date"}
    assert te["hours"]["type"] == "number"
    assert te["billable"]["type"] == "boolean"
    kinds = by_id["billing.discrepancy_row"]["properties"]["kind"]["enum"]
    assert set(kinds) == DISCREPANCY_KINDS


def test_billing_audit_required_profiles() -> None:
    pack = _domain(DOMAIN_DIR / "billing-audit.yaml")
    got = {(p.profile_id, p.entity_schema_id, p.kind_key, p.grain) for p in pack.canonical_profiles}
    assert {
        ("billing.table.json_rows.time_entries.v1", "billing.time_entry", "table.json_rows", "row"),
        ("billing.table.csv.time_entries.v1", "billing.time_entry", "table.csv", "row"),
        (
            "billing.table.json_rows.discrepancies.v1",
            "billing.discrepancy_row",
            "table.json_rows",
            "row",
        ),
    } <= got


def test_billing_time_entry_accepts_example_row() -> None:
    pack = _domain(DOMAIN_DIR / "billing-audit.yaml")
    schema = next(
        e.json_schema for e in pack.entity_schemas if e.entity_schema_id == "billing.time_entry"
    )
    row = {
        "entry_id": "TE-1",
        "consultant_id": "C-7",
        "client_id": "ACME",
        "project_id": "P-1",
        "work_date": "2024-03-04",
        "hours": 7.5,
        "billable": True,
        "description": "Design review",
        "rate_code": "SR-ENG",
    }
    Draft202012Validator(schema).validate(row)
    assert not Draft202012Validator(schema).is_valid({**row, "hours": -1})


# ------------------------------------------------------------------------ workflow packs


@pytest.mark.parametrize("path", WORKFLOW_FILES, ids=lambda p: p.stem)
def test_workflow_pack_valid(path: Path) -> None:
    pack = _workflow(path)
    assert pack.workflow_pack_id == path.stem
    assert pack.title.strip() and pack.purpose.strip()
    slots = pack.typical_slots
    assert slots.inputs or pack.workflow_pack_id in {"file-acquisition"}
    assert slots.outputs
    assert set(slots.inputs) <= SLOT_IDS, slots.inputs
    assert set(slots.outputs) <= SLOT_IDS, slots.outputs
    if pack.workflow_pack_id == "reconcile-compare":
        assert pack.min_input_sources == 2
    else:
        assert pack.min_input_sources in {0, 1}
    assert pack.side_effecting is (pack.workflow_pack_id == "deploy-publish")
    _check_phrases(pack.triggers, pack.example_goals)
    _check_rules(pack.workflow_pack_id, pack.disambiguation, WORKFLOW_IDS)
