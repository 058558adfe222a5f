"""One json_type (issue 32 §4): the contested cases, and what the ladder and imprinting do.

The ladder and the imprinting library each had a copy: they agreed on bool before int, null,
string, array and object, and disagreed on a whole float (the ladder said "integer", imprinting
"number") and on a value that is not JSON (its Python type name, or "object"). JSON Schema
settles the first: "integer" is any number with a zero fractional part.
"""

import math

import pytest
from jsonschema import Draft202012Validator

from compiler.imprint import TemplateError, schema_to_template, template_to_payload
from compiler.imprint.unfilled import kind_of
from compiler.jsontypes import json_type
from compiler.ladder import run_ladder
from compiler.ladder.schemaview import type_allows
from tests.ladder.helpers import contract

TYPES = ("null", "boolean", "integer", "number", "string", "array", "object")
CASES = [
    (None, "null"),
    (True, "boolean"),  # bool is an int to Python: checked first
    (False, "boolean"),
    (0, "integer"),
    (-7, "integer"),
    (10**30, "integer"),
    (1.0, "integer"),  # whole: an integer to JSON Schema, as jsonschema has it
    (-0.0, "integer"),
    (1e300, "integer"),
    (1.5, "number"),
    (math.inf, "number"),  # not whole (and not JSON: imprinting refuses it elsewhere)
    (math.nan, "number"),
    ("", "string"),
    ("1", "string"),
    ([], "array"),
    ({}, "object"),
    ({"a": [1]}, "object"),
]


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_the_json_schema_type_of_a_value(value: object, expected: str) -> None:
    assert json_type(value) == expected


def test_a_value_that_is_not_json_is_named_by_its_python_type_never_called_an_object() -> None:
    assert [json_type(v) for v in [(1, 2), {1}, b"x"]] == ["tuple", "set", "bytes"]


@pytest.mark.parametrize(("value", "expected"), CASES)
def test_it_names_the_most_specific_type_json_schema_accepts(value: object, expected: str) -> None:
    accepted = {t for t in TYPES if Draft202012Validator({"type": t}).is_valid(value)}
    assert accepted == ({expected, "number"} if expected == "integer" else {expected})


def test_the_ladder_takes_a_whole_float_for_an_integer_and_names_it_so() -> None:
    assert type_allows(frozenset({"integer"}), 1.0)
    assert not type_allows(frozenset({"integer"}), 1.5)
    assert run_ladder("1.0", contract()).findings[0].message == (
        "expected a top-level object, got integer"
    )


def test_imprinting_sends_a_whole_float_as_an_integer_where_one_is_needed() -> None:
    assert type(template_to_payload(1.0, {"type": "integer"})) is int
    number = template_to_payload(1.0, {"type": "number"})
    assert type(number) is float and number == 1.0


def test_imprinting_keeps_literals_as_they_were_written() -> None:
    # Output is unchanged by the merge: these choose by how a value was written, not its type.
    assert schema_to_template({"const": 2.0}) == "{AUTO|number|default:2.0}"
    assert schema_to_template({"const": 2}) == "{AUTO|integer|default:2}"
    either = {"oneOf": [{"type": "integer"}, {"type": "number"}]}
    assert type(template_to_payload(1.0, either)) is float  # the number alternative
    assert type(template_to_payload(1, either)) is int
    assert type(template_to_payload(1.0, {"enum": [1, 1.0]})) is float  # the 1.0 option


def _problem(filled: object, schema: dict[str, object]) -> str:
    with pytest.raises(TemplateError) as info:
        template_to_payload(filled, schema)
    return info.value.problem


def test_imprinting_errors_name_types_as_the_ladder_does() -> None:
    # Was "got number 1.0": the imprinting copy called 1.0 a number while taking it as an
    # integer, and the ladder called the same value an integer.
    assert _problem(1.0, {"type": "string"}) == "{FILL|string} needs a string, got integer 1.0"
    assert _problem(1.5, {"type": "string"}) == "{FILL|string} needs a string, got number 1.5"
    # Was "got object (1, 2)": a tuple is not an object.
    assert _problem((1, 2), {"type": "string"}).endswith("got tuple (1, 2)")


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        ("x", 'string "x"'),
        (7, "integer 7"),
        (1.0, "integer 1.0"),
        (2.5, "number 2.5"),
        (True, "boolean true"),
        (None, "null"),
        ([1], "array"),
        ({"a": 1}, "object"),
        ("y" * 50, 'string "' + "y" * 36 + "..."),
        ({1}, "set {1}"),
    ],
)
def test_kind_of_speaks_json_not_python(value: object, shown: str) -> None:
    # Was "a str ('x')", "a int ('7')", "a bool ('True')", "a list", "an object": Python's
    # names and literals, in messages to a model filling a JSON template.
    assert kind_of(value) == shown


def test_a_shape_error_names_what_was_sent_in_json() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    assert _problem(True, schema) == "expected an object, got boolean true"
    assert _problem({"a": 1}, {"type": "array", "items": {}}) == "expected a list, got object"
