"""`forge compile`, `forge explain` and `forge packs` as a person (or a script) uses them."""

import json
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from schemas.compiled import CompiledPlan
from workers.cli import app
from workers.cli.common import compile_context
from workers.services import runs

ROOT = Path(__file__).resolve().parents[2]
PLAN = ROOT / "examples" / "billing-audit" / "plan.json"


@pytest.fixture
def run(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.delenv("FORGE_PACKS_PATH", raising=False)
    runner = CliRunner()

    def invoke(*args: str):
        return runner.invoke(app, list(args))

    return invoke


def test_compile_prints_the_steps_table(run):
    result = run("compile", str(PLAN))
    assert result.exit_code == 0, result.output
    for key in ("profile_sources", "render_pdf", "adapt.table.csv-to-json_rows", "plan hash"):
        assert key in result.output
    assert "r3" in result.output and "r1" in result.output


def test_compile_and_explain_read_code_file_steps_as_run_does(run, monkeypatch):
    # `forge run` inlined each step's code_file; compile and explain refused it (E_SCHEMA).
    frozen = ROOT / "examples" / "billing-audit" / "frozen-plan.json"
    compiled = run("compile", str(frozen), "--json")
    assert compiled.exit_code == 0, compiled.output
    plan = CompiledPlan.model_validate_json(compiled.stdout)
    assert len(plan.steps) == 7
    document = runs.load_plan_document(frozen, json.loads(frozen.read_text()))
    assert runs.check_plan(document, compile_context(None)).compiled.plan_hash == plan.plan_hash
    explained = run("explain", str(frozen), "find_discrepancies")
    assert explained.exit_code == 0, explained.output
    assert "Pass E" in explained.output and "E_SCHEMA" not in explained.output
    rejected = run("compile", str(ROOT / "examples" / "bad-plan.json"))
    assert rejected.exit_code == 2 and "E_CYCLE" in rejected.output


def test_compile_json_is_a_compiled_plan(run):
    result = run("compile", str(PLAN), "--json")
    assert result.exit_code == 0
    plan = CompiledPlan.model_validate_json(result.stdout)
    assert len(plan.steps) == 11 and plan.plan_hash.startswith("sha256:")


def test_compile_out_writes_plan_and_contracts(run, tmp_path):
    out = tmp_path / "out"
    result = run("compile", str(PLAN), "--out", str(out))
    assert result.exit_code == 0, result.output
    plan = CompiledPlan.model_validate_json((out / "compiled_plan.json").read_text())
    written = sorted(p.name for p in (out / "contracts").iterdir())
    assert written == sorted(f"{s.step_id}.{s.step_key}.json" for s in plan.steps)


def test_rejection_lists_every_problem_and_exits_2(run, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text(
        json.dumps(
            {
                "mission": "m",
                "steps": [
                    {
                        "step_key": "a",
                        "label": "A",
                        "objective": "o",
                        "depends_on": ["b"],
                        "expected_outputs": [{"path": "../escape.json"}],
                    },
                    {
                        "step_key": "b",
                        "label": "B",
                        "objective": "o",
                        "depends_on": ["a"],
                        "expected_outputs": [{"path": "output/x.nope"}],
                    },
                ],
            }
        )
    )
    result = run("compile", str(bad))
    assert result.exit_code == 2
    for code in ("E_CYCLE", "E_PATH_ESCAPE", "E_BAD_EXTENSION"):
        assert code in result.output
    assert "Traceback" not in result.output and "nothing was compiled" in result.output


@pytest.mark.parametrize(
    ("content", "expected"),
    [('{"mission": ', "invalid JSON"), ("[]", "E_SCHEMA"), ("\xff", "not UTF-8")],
)
def test_bad_files_fail_cleanly(run, tmp_path, content, expected):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content.encode("latin-1"))
    result = run("compile", str(bad))
    assert result.exit_code == 2 and expected in result.output
    assert "Traceback" not in result.output


def test_missing_file_and_unknown_profile(run):
    assert "no such file" in run("compile", "nope.json").output
    result = run("compile", str(PLAN), "--profile", "no-such")
    assert result.exit_code == 2 and "E_UNKNOWN_PROFILE" in result.output


def test_profile_file_is_a_run_level_profile(run, tmp_path):
    profile = yaml.safe_load((ROOT / "stdlib" / "profiles" / "default.yaml").read_text())
    profile["profile_id"] = "my-run"
    profile["budgets"]["max_steps"] = 3
    path = tmp_path / "my-run.yaml"
    path.write_text(yaml.safe_dump(profile))
    result = run("compile", str(PLAN), "--profile", str(path))
    assert result.exit_code == 2 and "E_TOO_MANY_STEPS" in result.output


def test_explain_walks_one_step_through_five_passes(run):
    result = run("explain", str(PLAN), "find_discrepancies")
    assert result.exit_code == 0, result.output
    for title in ("Pass A", "Pass B", "Pass C", "Pass D", "Pass E"):
        assert title in result.output
    assert "reconcile-compare" in result.output and "contract_hash" in result.output
    assert "io_contract" in result.output


def test_explain_an_inserted_adapter_and_an_unknown_step(run):
    result = run("explain", str(PLAN), "adapt-input-time_entries-to-table_json_rows")
    assert result.exit_code == 0
    assert "inserted by the compiler in Pass C" in result.output
    missing = run("explain", str(PLAN), "nope")
    assert missing.exit_code == 2 and "profile_sources" in missing.output


def test_packs_list_and_show(run):
    listed = run("packs", "list")
    assert listed.exit_code == 0
    assert "Domain packs (12)" in listed.output and "Workflow packs (12)" in listed.output
    shown = run("packs", "show", "billing-audit")
    assert shown.exit_code == 0 and "billing.time_entry" in shown.output
    assert run("packs", "show", "nope").exit_code == 2


def _insurance_pack(directory: Path, entity: str = "claims.claim") -> None:
    (directory / "domains").mkdir(parents=True)
    (directory / "domains" / "insurance-claims.yaml").write_text(
        yaml.safe_dump(
            {
                "domain_pack_id": "insurance-claims",
                "title": "Insurance claims",
                "purpose": "Adjudicate insurance claims against policies.",
                "entity_schemas": [
                    {
                        "entity_schema_id": "claims.claim",
                        "title": "Claim",
                        "description": "One claim",
                        "key_fields": ["claim_id"],
                        "json_schema": {
                            "type": "object",
                            "required": ["claim_id"],
                            "properties": {
                                "claim_id": {"type": "string"},
                                "amount": {"type": "number"},
                            },
                        },
                    }
                ],
                "canonical_profiles": [
                    {
                        "profile_id": "claims.table.json_rows.claims.v1",
                        "entity_schema_id": entity,
                        "kind_key": "table.json_rows",
                        "grain": "row",
                    }
                ],
                "triggers": ["adjudicate claims", "claims review"],
                "example_goals": ["Adjudicate these claims against the policy terms."],
                "default_policy_profile_id": "strict.fail-closed.v1",
            }
        )
    )


def test_packs_check_accepts_a_custom_pack(run, tmp_path):
    _insurance_pack(tmp_path / "packs")
    result = run("packs", "check", str(tmp_path / "packs"))
    assert result.exit_code == 0, result.output
    assert "1 definitions check out" in result.output


def test_packs_check_names_file_and_field(run, tmp_path):
    _insurance_pack(tmp_path / "packs", entity="claims.ghost")
    result = run("packs", "check", str(tmp_path / "packs"))
    assert result.exit_code == 2
    assert "insurance-claims.yaml" in result.output
    assert "canonical_profiles[0].entity_schema_id" in result.output
    assert "claims.ghost" in result.output


def test_forge_packs_path_extends_the_library(run, tmp_path, monkeypatch):
    _insurance_pack(tmp_path / "packs")
    monkeypatch.setenv("FORGE_PACKS_PATH", str(tmp_path / "packs"))
    plan = tmp_path / "claims.json"
    plan.write_text(
        json.dumps(
            {
                "mission": "m",
                "steps": [
                    {
                        "step_key": "adjudicate",
                        "label": "Adjudicate claims",
                        "objective": "Adjudicate claims against the policy terms.",
                        "expected_outputs": [{"path": "output/claims.json"}],
                        "abstract_outputs": [
                            {
                                "slot": "findings",
                                "entity_schema_id": "claims.claim",
                                "preferred_kind_keys": ["table.json_rows"],
                            }
                        ],
                    }
                ],
            }
        )
    )
    result = run("compile", str(plan), "--json")
    assert result.exit_code == 0, result.output
    step = CompiledPlan.model_validate_json(result.stdout).steps[0]
    assert step.domain_pack_ids == ["insurance-claims"]
    contract = step.resolved_artifact_contracts["output/claims.json"]
    assert contract.profile_id == "claims.table.json_rows.claims.v1"


def test_a_plan_over_a_cap_is_rejected_naming_the_field_and_the_cap(run, tmp_path):
    """A 5 MB mission (issue 35) is a rejection like any other: nothing is compiled or run."""
    document = json.loads(PLAN.read_text())
    for mission, expected in (
        ("m" * 20_001, "20,001 characters; at most 20,000"),
        ("m" * 5_000_000, "at most 4,194,304"),
    ):
        big = tmp_path / "big.json"
        big.write_text(json.dumps({**document, "mission": mission}))
        for verb in ("compile", "run"):
            result = run(verb, str(big))
            assert result.exit_code == 2, result.output
            flat = " ".join(result.output.split())
            assert "E_TOO_LARGE" in flat and expected in flat, flat
            assert "Traceback" not in result.output and "nothing was compiled" in flat


def test_an_objective_over_its_cap_is_rejected_before_anything_is_stored(run, tmp_path):
    result = run("run", "-o", "reconcile " * 2_001)
    flat = " ".join(result.output.split())
    assert result.exit_code == 2 and "E_TOO_LARGE" in flat and "at most 20,000" in flat, flat
    assert "--objective" in flat and "Traceback" not in result.output
    assert not (tmp_path / "home" / "artifacts").exists()
