"""L4 contract conformance and L5 JsonLogic domain rules."""

import pytest

from compiler.ladder import DomainRule, LadderContract, run_ladder
from tests.ladder.helpers import TIME_ENTRY, contract, entry

ROWS = {"type": "array", "items": TIME_ENTRY}

# L4 -------------------------------------------------------------------------------------


def test_l4_strips_keys_the_contract_forbids_and_records_them():
    result = run_ladder(entry() | {"internal_note": "x", "cost": 3}, contract(), stages=["L4"])
    assert result.ok and "internal_note" not in result.payload
    assert [(c.op, c.path, c.before) for c in result.corrections] == [
        ("remove", "/internal_note", "x"),
        ("remove", "/cost", 3),
    ]


def test_l4_keeps_undeclared_keys_the_schema_allows_unless_asked_to_strip():
    schema = {**TIME_ENTRY, "additionalProperties": True}
    kept = run_ladder(entry() | {"note": "x"}, contract(schema), stages=["L4"])
    assert kept.payload["note"] == "x" and kept.corrections == []
    stripped = run_ladder(
        entry() | {"note": "x"}, contract(schema, strip_undeclared=True), stages=["L4"]
    )
    assert "note" not in stripped.payload
    assert stripped.corrections[0].reason == "not declared by the contract (strip_undeclared)"


def test_l4_pattern_properties_are_allowed_keys():
    schema = {
        "type": "object",
        "properties": {},
        "patternProperties": {"^x-": {}},
        "additionalProperties": False,
    }
    result = run_ladder({"x-trace": 1, "y": 2}, contract(schema), stages=["L4"])
    assert result.payload == {"x-trace": 1}


def test_l4_reports_every_violation_as_an_error_with_its_pointer():
    payload = entry(hours=30, work_date="15/03/2024", entry_id="", billable="yes")
    result = run_ladder(payload, contract(), stages=["L4"])
    errors = {f.path: f.message for f in result.findings}
    assert set(errors) == {"/hours", "/work_date", "/entry_id", "/billable"}
    assert errors["/hours"] == "30 is greater than the maximum of 24 (schema keyword 'maximum')"
    assert "is not a 'date'" in errors["/work_date"]
    assert result.blocked_by == "L4" and not result.ok


def test_l4_strips_inside_rows_too():
    result = run_ladder([entry(), entry() | {"x": 1}], contract(ROWS), stages=["L4"])
    assert result.ok and [c.path for c in result.corrections] == ["/1/x"]


def test_l4_long_messages_are_truncated():
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    result = run_ladder({"a": "x" * 5000}, contract(schema), stages=["L4"])
    assert len(result.findings[0].message) < 400


# L5 -------------------------------------------------------------------------------------

RULES = [
    DomainRule(
        rule_id="hours-range",
        logic={"<=": [0, {"var": "hours"}, 12]},
        message="hours must be between 0 and 12",
        path="/hours",
    ),
    DomainRule(
        rule_id="billed-needs-billable",
        logic={"or": [{"!=": [{"var": "status"}, "billed"]}, {"var": "billable"}]},
        message="a billed entry must be billable",
        severity="warning",
    ),
    DomainRule(
        rule_id="daily-rate-cap",
        logic={"<=": [{"*": [{"var": "hours"}, {"var": "rate"}]}, 2000]},
        message="more than the 2,000 daily cap",
        requires=("rate",),
    ),
]


def test_l5_rules_pass_on_good_data():
    result = run_ladder(entry(), contract(rules=RULES), stages=["L5"])
    assert result.ok and result.findings == []


def test_l5_range_cross_field_and_cap_rules():
    schema = {**TIME_ENTRY, "properties": {**TIME_ENTRY["properties"], "rate": {}}}
    c = contract(schema, rules=RULES)
    result = run_ladder(
        entry(hours=13, status="billed", billable=False) | {"rate": 200},
        c,
        stages=["L5"],
        mode="report",
    )
    assert [(f.path, f.severity, f.message) for f in result.findings] == [
        ("/hours", "error", "hours must be between 0 and 12 (rule 'hours-range')"),
        ("", "warning", "a billed entry must be billable (rule 'billed-needs-billable')"),
        ("", "error", "more than the 2,000 daily cap (rule 'daily-rate-cap')"),
    ]
    assert result.blocked_by is None and not result.ok


def test_l5_rules_with_missing_requirements_are_skipped():
    result = run_ladder(entry(), contract(rules=RULES[2:]), stages=["L5"])
    assert result.findings == []


def test_l5_each_item_scope_reports_per_row():
    c = contract(ROWS, rules=[RULES[0].model_copy(update={"scope": "each_item"})])
    result = run_ladder(
        [entry(), entry(hours=20), entry(hours=-1)], c, stages=["L5"], mode="report"
    )
    assert [f.path for f in result.findings] == ["/1/hours", "/2/hours"]


def test_l5_a_rule_that_cannot_be_evaluated_is_reported_not_raised():
    rule = DomainRule(
        rule_id="ratio",
        logic={">": [{"/": [{"var": "hours"}, {"var": "zero"}]}, 1]},
        message="ratio",
    )
    schema = {**TIME_ENTRY, "additionalProperties": True}
    result = run_ladder(entry() | {"zero": 0}, contract(schema, rules=[rule]), stages=["L5"])
    assert result.findings[0].message == "rule 'ratio' could not be evaluated: division by zero"


@pytest.mark.parametrize(
    ("logic", "problem"),
    [
        ({"nope": [1]}, "unknown JsonLogic operator 'nope'"),
        ({"==": [1, 1], "!=": [1, 2]}, "exactly one operator"),
        ({"!": [{"!": [{"!": [{"!": [True]}]}]}]}, "nests deeper than 4 levels"),
    ],
)
def test_bad_rules_are_contract_errors(logic, problem):
    from compiler.ladder import LadderLimits

    with pytest.raises(ValueError, match=problem):
        LadderContract(
            json_schema=TIME_ENTRY,
            limits=LadderLimits(max_rule_depth=4),
            rules=[DomainRule(rule_id="r", logic=logic, message="m")],
        )


# unevaluatedProperties (review finding 10) -----------------------------------------------

CLOSED_BY_UNEVALUATED = {
    "type": "object",
    "$defs": {"base": {"type": "object", "properties": {"a": {"type": "string"}}}},
    "allOf": [{"$ref": "#/$defs/base"}],
    "properties": {"b": {"type": "string"}},
    "unevaluatedProperties": False,
}


def test_l4_strips_keys_unevaluated_properties_false_forbids():
    result = run_ladder(
        {"a": "x", "b": "y", "junk": 1}, LadderContract(json_schema=CLOSED_BY_UNEVALUATED)
    )
    assert result.ok and result.payload == {"a": "x", "b": "y"}
    [strip] = result.corrections
    assert (strip.stage, strip.op, strip.path, strip.before) == ("L4", "remove", "/junk", 1)
    assert strip.reason == "the contract does not allow it (unevaluatedProperties: false)"


@pytest.mark.parametrize(
    "schema",
    [
        # a branch might evaluate "junk": only the validator can tell, so nothing is stripped
        {**CLOSED_BY_UNEVALUATED, "anyOf": [{"properties": {"junk": {}}}, {}]},
        # draft 7 has no unevaluatedProperties: jsonschema ignores it, so must the ladder
        {**CLOSED_BY_UNEVALUATED, "$schema": "http://json-schema.org/draft-07/schema#"},
    ],
    ids=["anyOf", "draft-07"],
)
def test_l4_does_not_strip_what_unevaluated_properties_might_allow(schema):
    result = run_ladder({"a": "x", "junk": 1}, LadderContract(json_schema=schema), stages=["L4"])
    assert result.corrections == [] and result.payload["junk"] == 1
