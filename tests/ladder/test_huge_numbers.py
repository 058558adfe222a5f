"""Huge numbers end in findings (intake refuses them, arithmetic overflow is caught).

Regression tests for the ladder review (finding 6).
"""

import json

import pytest

from compiler.ladder import DomainRule, LadderContract, ScaleTransform, run_ladder
from compiler.ladder.conformance import violations
from compiler.ladder.rules import evaluate
from compiler.ladder.stage import StageContext
from tests.ladder.helpers import contract, entry

BIG_TEXT = (
    '{"entry_id": "e", "client_id": "c", "work_date": "2024-01-01", "hours": 1' + "0" * 400 + "}"
)
ARITHMETIC = {
    "transforms": [ScaleTransform(path="/hours", factor=0.5)],
    "rules": [
        DomainRule(rule_id="r", logic={"<": [{"*": [{"var": "hours"}, 1.5]}, 100]}, message="m")
    ],
}


@pytest.mark.parametrize(
    "payload",
    [BIG_TEXT, entry(hours=10**400), entry(hours=10**5000), entry(hours=2**63 + 1)],
    ids=["text-401-digits", "python-401-digits", "python-5001-digits", "2**63+1"],
)
@pytest.mark.parametrize("mode", ["block", "report"])
def test_integers_beyond_2_63_are_refused_at_intake(payload, mode):
    result = run_ladder(payload, contract(**ARITHMETIC), mode=mode)
    assert (result.ok, result.blocked_by, result.payload) == (False, "L0", None)
    [error] = [f for f in result.findings if f.severity == "error"]
    assert error.path == "/hours" and "out of range" in error.message


def test_integers_within_2_63_are_accepted():
    schema = {"type": "object", "properties": {"n": {"type": "integer"}}}
    assert run_ladder({"n": -(2**63)}, LadderContract(json_schema=schema)).ok


def test_scaling_that_would_overflow_leaves_the_value_with_a_warning():
    c = contract(transforms=[ScaleTransform(path="/hours", factor=1e10, units={"k": 1000})])
    result = run_ladder(entry(hours=1e300), c, mode="report")
    assert result.payload["hours"] == 1e300
    [warning] = [f for f in result.findings if f.stage == "L0e"]
    assert "too large to represent" in warning.message
    json.dumps(result.model_dump(), allow_nan=False)  # no inf anywhere
    result = run_ladder(entry(hours="1" + "0" * 400 + " k"), c, mode="report")
    assert [f.stage for f in result.findings if "too large" in f.message] == ["L0e"]


def test_schema_arithmetic_that_overflows_is_a_violation_not_a_crash():
    # intake refuses such integers; L4 must not raise if one reaches it some other way
    schema = {"type": "object", "properties": {"x": {"type": "number", "multipleOf": 0.5}}}
    c = LadderContract(json_schema=schema)
    ctx = StageContext(contract=c, mode="block", model=None, later=frozenset(), view=c.view)
    [(path, message)] = violations({"x": 10**400}, ctx)
    assert path == "" and "too large for the schema to be checked" in message
    assert run_ladder({"x": 1.7e308}, c).ok  # a float: jsonschema copes on its own


def test_rule_arithmetic_that_overflows_is_a_finding_not_a_crash():
    assert evaluate({"*": [{"var": "x"}, 2]}, {"x": 10**400})[1].startswith("OverflowError")
    rule = DomainRule(
        rule_id="big", logic={"<": [{"*": [{"var": "hours"}, 10**400]}, 1]}, message="m"
    )
    result = run_ladder(entry(), contract(rules=[rule]))
    assert result.blocked_by == "L5"
    assert "rule 'big' could not be evaluated: OverflowError" in result.findings[-1].message
