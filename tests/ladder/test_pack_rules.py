"""L5 with the rules a real domain pack carries: the billing pack's cross-field checks."""

import pytest

from activities.compile.typelib import load_library
from compiler.ladder import run_ladder
from compiler.ladder.packs import contract_from_domain_pack

GOOD = {
    "discrepancy_id": "d1",
    "entry_id": "e1",
    "kind": "rate_mismatch",
    "expected_amount": 100.0,
    "billed_amount": 120.0,
    "delta": 20.0,
}


@pytest.fixture(scope="module")
def billing():
    return load_library().domain_packs["billing-audit"]


def test_consistent_discrepancy_passes(billing):
    result = run_ladder(GOOD, contract_from_domain_pack(billing, "billing.discrepancy_row"))
    assert result.ok and result.blocked_by is None


def test_inconsistent_delta_is_blocked_at_its_field(billing):
    contract = contract_from_domain_pack(billing, "billing.discrepancy_row")
    result = run_ladder({**GOOD, "delta": 5.0}, contract)
    assert not result.ok and result.blocked_by == "L5"
    [finding] = [f for f in result.findings if f.severity == "error"]
    assert finding.path == "/delta" and "billed_amount - expected_amount" in finding.message


def test_invoice_amount_rule_skips_lines_without_hours(billing):
    contract = contract_from_domain_pack(billing, "billing.invoice_line_item")
    line = {"invoice_id": "i", "line_id": "l", "client_id": "c", "amount": 310.0}
    assert run_ladder(line, contract).ok  # no hours or rate: the rule does not apply
    hours = {**line, "quantity_hours": 2, "unit_rate": 150}
    assert not run_ladder(hours, contract).ok
    assert run_ladder({**hours, "amount": 300.0}, contract).ok


def test_caller_rules_add_to_the_pack_rules(billing):
    extra = {
        "rule_id": "small",
        "message": "delta too large",
        "logic": {"<": [{"var": "delta"}, 10]},
    }
    contract = contract_from_domain_pack(billing, "billing.discrepancy_row", rules=[extra])
    assert [r.rule_id for r in contract.rules] == ["delta-is-billed-minus-expected", "small"]
    assert run_ladder(GOOD, contract).blocked_by == "L5"
