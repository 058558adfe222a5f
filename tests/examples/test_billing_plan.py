"""examples/billing-audit/plan.json: the nine phases of run 002 compile into sealed contracts."""

import json
from pathlib import Path

from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import compile_plan
from tests.compiler.conftest import make_ctx

PLAN = Path(__file__).resolve().parents[2] / "examples" / "billing-audit" / "plan.json"
PHASES = [
    "profile_sources",
    "normalize_sources",
    "contract_applicability",
    "find_discrepancies",
    "exception_summary",
    "correction_candidates",
    "submit_corrections",
    "render_report",
    "render_pdf",
]


def _compiled():
    return compile_plan(parse_candidate(json.loads(PLAN.read_text())), ctx=make_ctx())


def test_nine_phases_compile_with_two_inserted_adapters():
    plan = _compiled()
    planned = [s.step_key for s in plan.steps if not s.inserted_by_compiler]
    assert planned == PHASES
    adapters = [s for s in plan.steps if s.inserted_by_compiler]
    assert sorted(a.adapter_id for a in adapters) == ["adapt.table.csv-to-json_rows"] * 2
    order = [s.step_key for s in plan.steps]
    for a in adapters:  # every adapter runs before the step that consumes its output
        assert order.index(a.step_key) < order.index("normalize_sources")


def test_every_step_is_billing_audit_and_sealed():
    plan = _compiled()
    for step in plan.steps:
        assert step.domain_pack_ids == ["billing-audit"], step.step_key
        assert step.contract_hash.startswith("sha256:") and len(step.contract_hash) == 71
    assert len({s.contract_hash for s in plan.steps}) == len(plan.steps)
    assert len(plan.dispatch_packets) == len(plan.steps)


def test_bindings_and_policies_are_what_the_plan_means():
    steps = {s.step_key: s for s in _compiled().steps}
    normalize = {b.path: b for b in steps["normalize_sources"].bindings}
    assert {b.rank for b in normalize.values() if b.adapter_id} == {3}
    discrepancies = steps["find_discrepancies"]
    assert discrepancies.workflow_pack_ids == ["reconcile-compare"]
    assert all(b.rank == 1 for b in discrepancies.bindings)
    assert steps["submit_corrections"].policy_profile_id == "deploy.human-review-required.v1"
    report = steps["render_report"]
    assert [b.source.step_key for b in report.bindings] == [
        "exception_summary",
        "find_discrepancies",
        "correction_candidates",
    ]
    pdf = steps["render_pdf"].resolved_artifact_contracts["output/billing_audit_report.pdf"]
    assert (pdf.kind_key, pdf.parse_validator) == ("report.pdf", "pdf")


def test_compilation_is_deterministic():
    assert _compiled().model_dump_json() == _compiled().model_dump_json()
