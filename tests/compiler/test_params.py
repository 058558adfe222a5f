"""compiler/plan/params.py: NAME=VALUE pairs, typed values, binding a run's values to a plan."""

import json

import pytest

from compiler.plan.params import (
    ParameterInvalid,
    bind_params,
    coerce,
    declaration_problems,
    parse_assignments,
    typed_declarations,
)
from compiler.plan.planner import PLANNER_SCHEMA, candidate_from_answer, planner_template
from schemas.error_codes import ErrorCode
from schemas.plan import ParameterDecl
from tests.compiler.conftest import make_ctx


def decl(name: str, type_: str = "string", default=None) -> ParameterDecl:
    return ParameterDecl(name=name, type=type_, default=default)


def test_assignments_split_at_the_first_equals_sign():
    assert parse_assignments(["cutoff=2026-01-31", "expr=a=b", "empty="]) == {
        "cutoff": "2026-01-31",
        "expr": "a=b",
        "empty": "",
    }
    assert parse_assignments([]) == {}


@pytest.mark.parametrize("pair", ["no-equals", "=value", "1st=x", "bad-name=x", "a b=c"])
def test_a_malformed_assignment_is_refused_with_the_form_expected(pair):
    with pytest.raises(ParameterInvalid) as info:
        parse_assignments([pair])
    assert info.value.code is ErrorCode.PARAMETER_INVALID
    assert "NAME=VALUE" in str(info.value) and repr(pair) in str(info.value)


def test_a_name_given_twice_is_refused():
    with pytest.raises(ParameterInvalid, match="limit is given twice"):
        parse_assignments(["limit=1", "limit=2"])


@pytest.mark.parametrize(
    ("type_", "raw", "value"),
    [
        ("string", "x y", "x y"),
        ("string", 7, "7"),
        ("integer", "42", 42),
        ("integer", " -3 ", -3),
        ("integer", 5, 5),
        ("integer", 5.0, 5),
        ("number", "1.5", 1.5),
        ("number", "2", 2.0),
        ("number", 3, 3),
        ("number", 0.25, 0.25),
        ("boolean", "true", True),
        ("boolean", "YES", True),
        ("boolean", "1", True),
        ("boolean", "false", False),
        ("boolean", "no", False),
        ("boolean", "0", False),
        ("boolean", False, False),
    ],
)
def test_values_coerce_to_the_declared_type(type_, raw, value):
    got = coerce(decl("p", type_), raw)
    assert got == value and type(got) is type(value)


@pytest.mark.parametrize(
    ("type_", "raw"),
    [
        ("integer", "4.5"),
        ("integer", "ten"),
        ("integer", True),
        ("integer", 4.5),
        ("number", "nan"),
        ("number", "inf"),
        ("number", "1,5"),
        ("number", False),
        ("boolean", "maybe"),
        ("boolean", 1),
        ("string", True),
    ],
)
def test_a_value_not_of_its_type_is_refused_naming_parameter_type_and_value(type_, raw):
    with pytest.raises(ParameterInvalid) as info:
        coerce(decl("threshold", type_), raw)
    message = str(info.value)
    assert "'threshold'" in message and type_ in message and repr(raw) in message
    assert info.value.name == "threshold"
    assert info.value.line().startswith("PARAMETER_INVALID: ")


def test_binding_fills_defaults_and_coerces_what_was_given():
    decls = [decl("cutoff"), decl("limit", "integer", 10), decl("strict", "boolean", "no")]
    assert bind_params(decls, {"cutoff": "2026-01-31"}) == {
        "cutoff": "2026-01-31",
        "limit": 10,
        "strict": False,
    }
    assert bind_params(decls, {"cutoff": "x", "limit": "3", "strict": True}) == {
        "cutoff": "x",
        "limit": 3,
        "strict": True,
    }
    assert bind_params([], {}) == {}


def test_an_unknown_name_is_refused_listing_the_declared_ones():
    with pytest.raises(ParameterInvalid) as info:
        bind_params([decl("cutoff", default="a"), decl("limit", "integer", 1)], {"limt": "3"})
    assert "limt" in str(info.value) and "declared: cutoff, limit" in str(info.value)
    with pytest.raises(ParameterInvalid, match="declared: none"):
        bind_params([], {"x": "1"})


def test_a_parameter_without_default_must_be_given():
    with pytest.raises(ParameterInvalid) as info:
        bind_params([decl("cutoff")], {})
    assert "'cutoff'" in str(info.value) and "--param cutoff=VALUE" in str(info.value)


def test_declarations_are_checked_and_defaults_typed():
    decls = [decl("a", "integer", "5"), decl("a"), decl("b", "boolean", "perhaps")]
    problems = declaration_problems(decls, ["a", "zz"])
    assert any("'a' is declared twice" in p for p in problems)
    assert any("default of parameter 'b'" in p for p in problems)
    assert any("--param zz" in p for p in problems)
    assert typed_declarations([decl("a", "integer", "5")])[0].default == 5
    with pytest.raises(ParameterInvalid, match="declared twice"):
        bind_params(decls, {})


ANSWER = {
    "mission": "Total sales after a cutoff date",
    "steps": [
        {
            "step_key": "totals",
            "label": "Total the sales",
            "objective": "MUST total sales on or after the cutoff parameter",
            "input_file_paths": ["input/sales.csv"],
            "expected_outputs": [{"path": "output/totals.json", "role": "primary"}],
            "success_criteria": "totals.json holds one number",
        }
    ],
}
RUN_INPUTS = [{"name": "sales", "path": "input/sales.csv"}]


def _intake(answer: dict, **kwargs):
    return candidate_from_answer(
        json.dumps(answer), ctx=make_ctx(), run_inputs=RUN_INPUTS, phase_mode="block", **kwargs
    )


def test_the_planner_template_offers_parameters():
    assert "parameters" in PLANNER_SCHEMA["properties"]
    assert "parameters" not in PLANNER_SCHEMA["required"]
    template = planner_template()
    assert '"parameters": [' in template and "{FILL_ENUM|string|integer|number|boolean}" in template


def test_a_plan_without_parameters_is_accepted_as_before():
    candidate, problems = _intake(ANSWER)
    assert problems == [] and candidate is not None and candidate.parameters == []


def test_a_plan_with_parameters_carries_them_typed():
    answer = {
        **ANSWER,
        "parameters": [
            {"name": "cutoff", "type": "string", "default": "2026-01-01", "description": "from"},
            {"name": "limit", "type": "integer", "default": "5"},
        ],
    }
    candidate, problems = _intake(answer, params={"cutoff": "2026-02-01"})
    assert problems == [] and candidate is not None
    assert [(p.name, p.type, p.default) for p in candidate.parameters] == [
        ("cutoff", "string", "2026-01-01"),
        ("limit", "integer", 5),
    ]
    assert candidate.parameters[0].description == "from"


def test_a_parameter_the_user_gave_must_be_declared_and_defaults_must_fit():
    candidate, problems = _intake(ANSWER, params={"cutoff": "2026-02-01"})
    assert candidate is None and any("--param cutoff" in p for p in problems)
    bad = {**ANSWER, "parameters": [{"name": "limit", "type": "integer", "default": "lots"}]}
    candidate, problems = _intake(bad)
    assert candidate is None and any("'limit' must be an integer" in p for p in problems)


def test_an_untouched_parameters_template_means_no_parameters():
    # The planner copied the template's parameters entry without filling it: no parameters.
    untouched = {
        **ANSWER,
        "parameters": [
            {
                "name": "{FILL|string|pattern:^[A-Za-z_][A-Za-z0-9_]{0,63}$}",
                "type": "{FILL_ENUM|string|integer|number|boolean}",
                "default": {
                    "{ONE_OF}": [
                        "{OPTIONAL|string}",
                        "{OPTIONAL|integer}",
                        "{OPTIONAL|number}",
                        "{OPTIONAL|boolean}",
                    ]
                },
                "description": "{OPTIONAL|string}",
            }
        ],
    }
    candidate, problems = _intake(untouched)
    assert problems == [] and candidate is not None and candidate.parameters == []
