"""run_ladder as a whole: order, modes, the verdict, and corrections that replay exactly."""

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from activities.compile.typelib import load_library
from compiler.ladder import (
    STAGE_IDS,
    DateTransform,
    DomainRule,
    EnumCaseTransform,
    LadderLimits,
    contract_from_domain_pack,
    run_ladder,
)
from compiler.ladder.intake import intake
from tests.ladder.helpers import ScriptedModel, apply_patch, contract, entry


def test_stage_ids_are_in_ladder_order():
    assert STAGE_IDS == ("L3", "L0", "L0b", "L0c", "L0d", "L0e", "L1", "L2", "L4", "L5", "L6")


def test_stages_always_run_in_ladder_order_whatever_order_is_asked():
    result = run_ladder(entry(), contract(), stages=["L4", "L0", "L3", "L0b"])
    assert result.stages_run == ["L3", "L0", "L0b", "L4"]


def test_all_deterministic_stages_run_by_default():
    result = run_ladder(entry(), contract())
    assert result.stages_run == ["L3", "L0", "L0b", "L0c", "L0d", "L0e", "L1", "L4", "L5"]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"stages": ["L7"]}, r"unknown ladder stages \['L7'\]"),
        ({"stages": "L0"}, "not the string 'L0'"),
        ({"mode": "warn"}, "mode must be 'block' or 'report'"),
    ],
)
def test_bad_arguments_are_value_errors(kwargs, message):
    with pytest.raises(ValueError, match=message):
        run_ladder(entry(), contract(), **kwargs)


def test_block_mode_stops_at_the_first_error_report_mode_runs_on():
    rules = [DomainRule(rule_id="cap", logic={"<=": [{"var": "hours"}, 8]}, message="cap")]
    payload = entry(hours=30)  # L4 (maximum 24) and L5 (cap 8) both object
    blocked = run_ladder(payload, contract(rules=rules))
    assert blocked.blocked_by == "L4" and "L5" not in blocked.stages_run
    assert blocked.payload == payload
    reported = run_ladder(payload, contract(rules=rules), mode="report")
    assert reported.blocked_by is None and not reported.ok
    assert [f.stage for f in reported.findings if f.severity == "error"] == ["L4", "L5"]


def test_warnings_and_infos_do_not_make_a_result_not_ok():
    result = run_ladder(entry() | {"zzz": 1}, contract())
    assert result.ok and {f.severity for f in result.findings} == {"info"}


def test_findings_are_capped_with_a_summary_that_keeps_the_worst_severity():
    c = contract(
        {"type": "array", "items": {"type": "integer"}}, limits=LadderLimits(max_findings=5)
    )
    result = run_ladder(["x"] * 50, c, stages=["L4"])
    assert len(result.findings) == 6 and not result.ok
    assert result.findings[-1].message == "45 more findings not shown (limits.max_findings)"
    assert result.findings[-1].severity == "error"


def test_a_full_run_repairs_a_messy_payload_and_records_every_change():
    c = contract(
        synonyms={"customer_id": "client_id", "date": "work_date"},
        defaults={"/billable": True},
        transforms=[DateTransform(path="/work_date"), EnumCaseTransform(path="/status")],
        rules=[DomainRule(rule_id="cap", logic={"<=": [{"var": "hours"}, 12]}, message="cap")],
    )
    messy = json.dumps(
        {
            "entry_id": "e-7",
            "CustomerID": "acme",
            "date": "03/15/2024",
            "hours": 6,
            "status": "APPROVED",
            "descripton": "workshop",
            "internal": "strip me",
        }
    )
    result = run_ladder(messy, c)
    assert result.ok, result.findings
    assert result.payload == {
        "entry_id": "e-7",
        "client_id": "acme",
        "work_date": "2024-03-15",
        "hours": 6,
        "status": "approved",
        "description": "workshop",
        "billable": True,
    }
    assert [(x.stage, x.op) for x in result.corrections] == [
        ("L0b", "move"),
        ("L0b", "move"),
        ("L0d", "add"),
        ("L0e", "replace"),
        ("L0e", "replace"),
        ("L1", "move"),
        ("L4", "remove"),
    ]
    parsed = json.loads(messy)
    assert apply_patch(parsed, result.as_json_patch()) == result.payload


_names = st.sampled_from(
    [
        "entry_id",
        "client_id",
        "customer_id",
        "CustomerId",
        "hours",
        "hours_workd",
        "status",
        "work_date",
        "date",
        "billable",
        "descripton",
        "description",
        "note",
        "wrapper",
    ]
)
_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-5, 30),
    st.floats(-5, 30),
    st.sampled_from(
        ["APPROVED", "draft", "03/15/2024", "2024-03-15", "15.03.2024", "e-1", '{"hours": 3}', "x"]
    ),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=4),
    max_leaves=12,
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_names, _values, max_size=10) | st.lists(_values, max_size=3))
def test_corrections_replay_to_the_final_payload_and_nothing_else_changes(payload):
    c = contract(
        synonyms={"customer_id": "client_id", "date": "work_date"},
        defaults={"/billable": True},
        transforms=[DateTransform(path="/work_date"), EnumCaseTransform(path="/status")],
    )
    original = copy.deepcopy(payload)
    result = run_ladder(payload, c, mode="report")
    assert payload == original  # the caller's value is never touched
    assert result.payload is not None
    parsed = intake(payload, c.limits).value
    assert apply_patch(parsed, result.as_json_patch()) == result.payload


def test_results_are_deterministic():
    model = ScriptedModel()
    runs = [
        run_ladder(entry() | {"descripton": "x"}, contract(), model=model).model_dump()
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]


def test_a_contract_from_a_domain_pack_uses_its_schema_and_synonyms():
    pack = load_library().domain_packs["billing-audit"]
    c = contract_from_domain_pack(
        pack,
        "billing.time_entry",
        rules=[
            DomainRule(
                rule_id="day",
                logic={"<=": [{"var": "hours"}, 16]},
                message="more than 16 hours in a day",
                path="/hours",
            )
        ],
        transforms=[DateTransform(path="/work_date")],
    )
    row = {
        "entry_id": "t1",
        "employee_id": "u7",
        "customer_id": "acme",
        "date": "3/15/2024",
        "hours_worked": 18,
        "is_billable": True,
    }
    result = run_ladder(row, c, mode="report")
    assert result.payload == {
        "entry_id": "t1",
        "consultant_id": "u7",
        "client_id": "acme",
        "work_date": "2024-03-15",
        "hours": 18,
        "billable": True,
    }
    assert [(f.stage, f.path) for f in result.findings if f.severity == "error"] == [
        ("L5", "/hours")
    ]
    with pytest.raises(KeyError, match="has no entity 'billing.nope'"):
        contract_from_domain_pack(pack, "billing.nope")


def test_the_benchmark_payloads_are_repaired_by_the_ladder():
    from tests.bench.bench_ladder import DETERMINISTIC, _contract, _schema, payloads

    c = _contract(_schema())
    for messy in (True, False):
        row = payloads(messy=messy)[0]
        result = run_ladder(row, c, stages=DETERMINISTIC)
        assert result.ok, result.findings
        assert len(result.corrections) == (7 if messy else 0)
        assert len(result.payload) == 50
