"""Boolean schemas (false leaves out what it forbids), tuples per position, KEY_ENUM keys."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.imprint import (
    TemplateError,
    constraint_notes,
    schema_to_template,
    template_to_payload,
)

from .conftest import validator


def _round_trip(schema: dict[str, Any], filled: Any, doc: dict[str, Any] | None = None) -> Any:
    payload = template_to_payload(filled, schema, document=doc)
    assert not list(validator(schema, doc).iter_errors(payload))
    return payload


def test_a_false_property_is_left_out_and_refused() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": False}}
    assert schema_to_template(schema) == {"a": "{OPTIONAL|string}"}
    with pytest.raises(TemplateError) as caught:
        template_to_payload({"a": "x", "b": 1}, schema)
    assert caught.value.path == "$.b"
    required = {**schema, "required": ["b"]}
    with pytest.raises(TemplateError) as unsat:
        schema_to_template(required)
    assert unsat.value.reason == "unsatisfiable"


def test_a_ref_to_false_and_an_unsatisfiable_optional_part_are_left_out() -> None:
    schema = {
        "$defs": {"Never": False},
        "type": "object",
        "properties": {
            "a": {"$ref": "#/$defs/Never"},
            "b": {"allOf": [{"type": "string"}, False]},
            "c": {"type": "object", "properties": {"x": False}, "required": ["x"]},
            "d": {"type": "integer"},
        },
    }
    assert schema_to_template(schema) == {"d": "{OPTIONAL|integer}"}


def test_false_alternatives_are_dropped() -> None:
    assert schema_to_template({"anyOf": [{"type": "string"}, False]}) == "{FILL|string}"
    two = {"oneOf": [False, {"type": "string"}, {"$ref": "#/$defs/N"}, {"type": "integer"}]}
    two["$defs"] = {"N": False}
    assert schema_to_template(two) == {"{ONE_OF}": ["{FILL|string}", "{FILL|integer}"]}
    with pytest.raises(TemplateError) as caught:
        schema_to_template({"anyOf": [False, {"allOf": [False]}]})
    assert caught.value.reason == "unsatisfiable"
    with pytest.raises(TemplateError) as member:
        schema_to_template({"allOf": [{"type": "string"}, False]})
    assert member.value.reason == "unsatisfiable"


def test_items_false_without_positions_is_an_empty_array() -> None:
    schema = {"type": "object", "properties": {"t": {"type": "array", "items": False}}}
    assert schema_to_template(schema) == {"t": "{AUTO|array|default:[]}"}
    assert _round_trip({**schema, "required": ["t"]}, {"t": "{AUTO|array|default:[]}"}) == {"t": []}
    with pytest.raises(TemplateError):
        schema_to_template({"type": "array", "items": False, "minItems": 1})


@pytest.mark.parametrize(
    ("schema", "doc"),
    [
        ({"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}]}, None),
        (
            {
                "type": "array",
                "prefixItems": [{"type": "string"}, {"type": "integer"}],
                "items": False,
            },
            None,
        ),
        (
            {
                "type": "array",
                "items": [{"type": "string"}, {"type": "integer"}],
                "additionalItems": False,
            },
            {"swagger": "2.0", "paths": {}},
        ),
    ],
)
def test_tuples_are_templated_per_position(schema: dict[str, Any], doc: Any) -> None:
    tuple_schema = {**schema, "minItems": 1}
    assert schema_to_template(tuple_schema, document=doc) == ["{FILL|string}", "{OPTIONAL|integer}"]
    assert constraint_notes(tuple_schema, document=doc)["$"].startswith("a tuple")
    assert _round_trip(tuple_schema, ["a", 2], doc) == ["a", 2]
    assert _round_trip(tuple_schema, ["a", "{OPTIONAL|integer}"], doc) == ["a"]
    with pytest.raises(TemplateError) as wrong:
        template_to_payload([1, 2], tuple_schema, document=doc)
    assert wrong.value.path == "$[0]"


def test_a_closed_tuple_refuses_further_items_and_gaps() -> None:
    schema = {
        "type": "array",
        "prefixItems": [{"type": "string"}, {"type": "integer"}],
        "items": False,
    }
    with pytest.raises(TemplateError) as extra:
        template_to_payload(["a", 1, 2], schema)
    assert extra.value.reason == "count" and extra.value.path == "$[2]"
    with pytest.raises(TemplateError) as gap:
        template_to_payload(["{OPTIONAL|string}", 1], schema)
    assert gap.value.path == "$[0]"
    open_schema = {**schema, "items": {"type": "boolean"}}
    assert _round_trip(open_schema, ["a", 1, True]) == ["a", 1, True]


def test_property_names_enum_becomes_a_key_enum() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "propertyNames": {"enum": ["aa", "bb"]},
    }
    assert schema_to_template(schema) == {"{KEY_ENUM|aa|bb}": "{FILL|integer}"}
    assert _round_trip(schema, {"aa": 1, "{KEY_ENUM|aa|bb}": "{FILL|integer}"}) == {"aa": 1}
    with pytest.raises(TemplateError) as caught:
        template_to_payload({"cc": 1}, schema)
    assert caught.value.reason == "key" and "aa, bb" in caught.value.hint
