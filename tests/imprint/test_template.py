"""schema_to_template: tokens, nullability per dialect, refs, recursion, allOf, oneOf, maps."""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from compiler.imprint import (
    ONE_OF,
    REF_CIRCULAR,
    REF_MAX_DEPTH,
    TemplateError,
    constraint_notes,
    schema_to_template,
)

OAS30 = {"openapi": "3.0.3", "paths": {}}
OAS31 = {"openapi": "3.1.0", "paths": {}}
SWAGGER = {"swagger": "2.0", "paths": {}}


def obj(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = required
    return schema


def test_the_seed_example_renders_exactly() -> None:
    schema = obj(
        ["customer"],
        customer=obj(
            ["id", "profile"],
            id={"type": "string", "format": "uuid", "readOnly": True},
            profile=obj(
                ["name", "status"],
                name={"type": "string"},
                status={"enum": ["active", "paused", "archived"]},
                tags={"type": "array", "items": {"type": "string"}},
            ),
        ),
    )
    assert schema_to_template(schema) == {
        "customer": {
            "id": "{AUTO|string|format:uuid}",
            "profile": {
                "name": "{FILL|string}",
                "status": "{FILL_ENUM|active|paused|archived}",
                "tags": ["{OPTIONAL|string}"],
            },
        }
    }


@pytest.mark.parametrize(
    ("schema", "document", "token"),
    [
        ({"type": "string", "nullable": True}, OAS30, "{FILL|string?}"),
        ({"type": ["string", "null"]}, OAS31, "{FILL|string?}"),
        ({"type": ["integer", "null"]}, None, "{FILL|integer?}"),
        ({"type": "string", "x-nullable": True}, SWAGGER, "{FILL|string?}"),
        # nullable means nothing outside OpenAPI 3.0 (and x-nullable outside Swagger 2.0)
        ({"type": "string", "nullable": True}, OAS31, "{FILL|string}"),
        ({"type": "string", "nullable": True}, None, "{FILL|string}"),
        ({"type": "null"}, OAS31, "{FILL|null}"),
    ],
)
def test_nullable_follows_the_documents_dialect(schema, document, token) -> None:
    assert schema_to_template(schema, document=document) == token


@pytest.mark.parametrize(
    ("schema", "document", "token"),
    [
        ({"type": "integer", "minimum": 1, "maximum": 100}, None, "{FILL|integer|range:1-100}"),
        ({"type": "integer", "exclusiveMinimum": 0}, None, "{FILL|integer|range:1-}"),
        (
            {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 10},
            OAS30,
            "{FILL|integer|range:1-10}",
        ),
        (
            {"type": "number", "exclusiveMinimum": 0, "maximum": 1.5},
            None,
            "{FILL|number|range:..1.5|exclusive_range:0-}",
        ),
        ({"type": "number", "multipleOf": 0.25}, None, "{FILL|number|multiple_of:0.25}"),
        (
            {"type": "string", "pattern": "^(a|b)$", "minLength": 1, "maxLength": 3},
            None,
            "{FILL|string|pattern:^(a\\|b)$|min_length:1|max_length:3}",
        ),
        (
            {"type": "string", "format": "date-time", "default": "2020-01-01T00:00:00Z"},
            None,
            '{FILL|string|format:date-time|default:"2020-01-01T00:00:00Z"}',
        ),
        ({"type": "integer", "format": "int64"}, None, "{FILL|integer|format:int64}"),
    ],
)
def test_constraints_sit_inline_in_the_token(schema, document, token) -> None:
    assert schema_to_template(schema, document=document) == token


@pytest.mark.parametrize(
    ("schema", "token"),
    [
        ({"const": "card"}, '{AUTO|string|default:"card"}'),
        ({"type": "string", "enum": ["only"]}, '{AUTO|string|default:"only"}'),
        ({"type": "string", "readOnly": True, "format": "uuid"}, "{AUTO|string|format:uuid}"),
        ({"type": "string", "x-forge-auto": "uuid"}, "{AUTO|string|format:uuid}"),
        ({"type": "integer", "enum": [1, 2, 3]}, "{FILL_ENUM|1|2|3}"),
        ({"type": "string", "enum": ["a|b", "c"]}, "{FILL_ENUM|a\\|b|c}"),
        ({"type": ["string", "null"], "enum": ["x", None]}, "{FILL_ENUM|x|null}"),
        ({"type": "string", "enum": ["x", 1]}, '{AUTO|string|default:"x"}'),
    ],
)
def test_auto_and_enum_tokens(schema, token) -> None:
    assert schema_to_template(schema) == token


def test_optional_properties_get_optional_tokens() -> None:
    schema = obj(["a"], a={"type": "string"}, b={"type": "string"}, c={"enum": ["x", "y"]})
    assert schema_to_template(schema) == {
        "a": "{FILL|string}",
        "b": "{OPTIONAL|string}",
        "c": "{OPTIONAL_ENUM|x|y}",
    }


def test_free_form_and_untyped_values() -> None:
    schema = obj(["a", "b", "c"], a={"type": "object"}, b={"type": "array"}, c={})
    assert schema_to_template(schema) == {
        "a": "{FILL|object}",
        "b": "{FILL|array}",
        "c": "{FILL|string}",  # untyped: shown as text, any JSON value is accepted back
    }


def test_refs_resolve_against_the_document_through_chains() -> None:
    doc = {
        "openapi": "3.0.3",
        "components": {
            "schemas": {
                "A": {"$ref": "#/components/schemas/B"},
                "B": {"$ref": "#/components/schemas/C", "description": "alias"},
                "C": obj(["x"], x={"type": "integer"}),
                "a/b": {"type": "boolean"},
            }
        },
    }
    schema = obj(a={"$ref": "#/components/schemas/A"}, s={"$ref": "#/components/schemas/a~1b"})
    assert schema_to_template(schema, document=doc) == {
        "a": {"x": "{FILL|integer}"},
        "s": "{OPTIONAL|boolean}",
    }


def test_refs_resolve_against_the_schema_itself_without_a_document() -> None:
    schema = {
        "definitions": {"Pet": obj(["name"], name={"type": "string"})},
        "$defs": {"Tag": {"type": "string"}},
        "type": "object",
        "properties": {
            "pet": {"$ref": "#/definitions/Pet"},
            "tag": {"$ref": "#/$defs/Tag"},
        },
    }
    assert schema_to_template(schema) == {
        "pet": {"name": "{FILL|string}"},
        "tag": "{OPTIONAL|string}",
    }


def _tree_doc() -> dict[str, Any]:
    node = obj(
        ["value"],
        value={"type": "integer"},
        children={"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
        parent={"$ref": "#/components/schemas/Node"},
    )
    return {"openapi": "3.0.3", "components": {"schemas": {"Node": node}}}


def test_a_ref_that_reenters_itself_becomes_the_circular_marker() -> None:
    doc = _tree_doc()
    template = schema_to_template({"$ref": "#/components/schemas/Node"}, document=doc)
    assert template == {
        "value": "{FILL|integer}",
        "children": [REF_CIRCULAR],
        "parent": REF_CIRCULAR,
    }


def test_max_depth_stops_nested_references() -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "L1": obj(next={"$ref": "#/components/schemas/L2"}),
                "L2": obj(next={"$ref": "#/components/schemas/L3"}),
                "L3": obj(leaf={"type": "string"}),
            }
        },
    }
    root = {"$ref": "#/components/schemas/L1"}
    assert schema_to_template(root, document=doc) == {
        "next": {"next": {"leaf": "{OPTIONAL|string}"}}
    }
    assert schema_to_template(root, document=doc, max_depth=2) == {"next": {"next": REF_MAX_DEPTH}}
    assert schema_to_template(root, document=doc, max_depth=0) == REF_MAX_DEPTH


def test_all_of_is_merged_into_one_template() -> None:
    doc = {
        "openapi": "3.0.3",
        "components": {"schemas": {"Base": obj(["id"], id={"type": "integer", "minimum": 0})}},
    }
    schema = {
        "allOf": [
            {"$ref": "#/components/schemas/Base"},
            obj(["name"], name={"type": "string"}, id={"type": "integer", "maximum": 9}),
        ]
    }
    assert schema_to_template(schema, document=doc) == {
        "id": "{FILL|integer|range:0-9}",
        "name": "{FILL|string}",
    }


def test_all_of_respects_a_closed_member() -> None:
    schema = {
        "allOf": [
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
            },
            {"type": "object", "properties": {"b": {"type": "string"}}},
        ]
    }
    # JSON Schema checks the first member alone: it forbids "b", so the template leaves it out.
    assert schema_to_template(schema) == {"a": "{OPTIONAL|string}"}


def test_one_of_becomes_a_choice_and_nested_choices_flatten() -> None:
    schema = {
        "oneOf": [
            {"type": "string"},
            {"oneOf": [{"type": "integer"}, obj(["x"], x={"type": "boolean"})]},
        ]
    }
    assert schema_to_template(schema) == {
        ONE_OF: ["{FILL|string}", "{FILL|integer}", {"x": "{FILL|boolean}"}]
    }


def test_keywords_beside_one_of_apply_to_every_alternative() -> None:
    schema = {
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string"}},
        "anyOf": [obj(a={"type": "string"}), obj(b={"type": "integer"})],
    }
    assert schema_to_template(schema) == {
        ONE_OF: [
            {"id": "{FILL|string}", "a": "{OPTIONAL|string}"},
            {"id": "{FILL|string}", "b": "{OPTIONAL|integer}"},
        ]
    }


def test_discriminator_values_are_filled_in_for_each_alternative() -> None:
    doc = {
        "openapi": "3.0.3",
        "components": {
            "schemas": {
                "Cat": obj(["pet_type"], pet_type={"type": "string"}, hunts={"type": "boolean"}),
                "Dog": obj(["pet_type"], pet_type={"type": "string"}, barks={"type": "boolean"}),
            }
        },
    }
    schema = {
        "oneOf": [{"$ref": "#/components/schemas/Cat"}, {"$ref": "#/components/schemas/Dog"}],
        "discriminator": {
            "propertyName": "pet_type",
            "mapping": {"cat": "#/components/schemas/Cat"},
        },
    }
    assert schema_to_template(schema, document=doc) == {
        ONE_OF: [
            {"pet_type": '{AUTO|string|default:"cat"}', "hunts": "{OPTIONAL|boolean}"},
            {"pet_type": '{AUTO|string|default:"Dog"}', "barks": "{OPTIONAL|boolean}"},
        ]
    }


def test_an_inherited_discriminator_names_the_subtype() -> None:
    doc = {
        "openapi": "3.0.3",
        "components": {
            "schemas": {
                "Pet": {
                    **obj(["kind"], kind={"type": "string"}),
                    "discriminator": {"propertyName": "kind"},
                },
                "Cat": {
                    "allOf": [{"$ref": "#/components/schemas/Pet"}, obj(lives={"type": "integer"})]
                },
            }
        },
    }
    assert schema_to_template({"$ref": "#/components/schemas/Cat"}, document=doc) == {
        "kind": '{AUTO|string|default:"Cat"}',
        "lives": "{OPTIONAL|integer}",
    }
    # The base itself keeps the field for the model to fill.
    assert schema_to_template({"$ref": "#/components/schemas/Pet"}, document=doc) == {
        "kind": "{FILL|string}"
    }


def test_several_types_become_a_choice() -> None:
    assert schema_to_template({"type": ["string", "integer", "null"]}) == {
        ONE_OF: ["{FILL|string}", "{FILL|integer}", "{FILL|null}"]
    }


def test_maps_get_a_key_token() -> None:
    schema = {
        "type": "object",
        "properties": {"fixed": {"type": "string"}},
        "patternProperties": {"^x-": {"type": "integer"}},
        "additionalProperties": {"type": "array", "items": {"type": "string"}},
        "propertyNames": {"maxLength": 10},
    }
    assert schema_to_template(schema) == {
        "fixed": "{OPTIONAL|string}",
        # a map value is FILL when the map is required: a key you add needs its value
        "{KEY|string|pattern:^x-}": "{FILL|integer}",
        "{KEY|string|max_length:10}": ["{FILL|string}"],
    }


def test_json_carried_in_a_string_shows_the_nested_object() -> None:
    inner = obj(["n"], n={"type": "integer"})
    as_content = {"type": "string", "contentMediaType": "application/json", "contentSchema": inner}
    as_extension = {"type": "string", "x-serialization": "json", "contentSchema": inner}
    assert schema_to_template(as_content) == {"n": "{FILL|integer}"}
    assert schema_to_template(as_extension, document=OAS30) == {"n": "{FILL|integer}"}


def test_constraint_notes_cover_what_tokens_cannot_say() -> None:
    schema = obj(
        tags={
            "type": "array",
            "items": {"type": "string"},
            "minItems": 1,
            "maxItems": 5,
            "uniqueItems": True,
        },
        meta={"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 3},
        pick={
            "oneOf": [
                {"type": "array", "items": {"type": "integer"}, "minItems": 2},
                {"type": "string"},
            ]
        },
    )
    assert constraint_notes(schema) == {
        "$.tags": "1-5 items, unique",
        "$.meta": "at most 3 properties",
        "$.pick{ONE_OF}[0]": "at least 2 items",
    }


def test_templating_is_deterministic_and_leaves_the_input_alone() -> None:
    doc = _tree_doc()
    before = copy.deepcopy(doc)
    first = schema_to_template({"$ref": "#/components/schemas/Node"}, document=doc)
    second = schema_to_template({"$ref": "#/components/schemas/Node"}, document=doc)
    assert json.dumps(first) == json.dumps(second)
    assert doc == before


def test_contradictory_all_of_is_refused_with_its_location() -> None:
    schema = {"allOf": [{"type": "string"}, {"type": "integer"}]}
    with pytest.raises(TemplateError) as info:
        schema_to_template(schema)
    assert info.value.reason == "schema" and info.value.path == "#/allOf/1"
    assert "disagree on type" in info.value.problem
