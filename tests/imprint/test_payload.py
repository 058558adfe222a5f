"""template_to_payload: unfilled tokens, AUTO, choices, maps, embedded JSON, synonyms, errors."""

from __future__ import annotations

import json
from typing import Any

import pytest

from compiler.imprint import (
    ONE_OF,
    REF_CIRCULAR,
    AutoByFormat,
    TemplateError,
    schema_to_template,
    template_to_payload,
)
from tests.imprint.conftest import validator

UUID = "123e4567-e89b-42d3-a456-426614174000"
FIXED = AutoByFormat({"uuid": lambda: UUID, "date-time": lambda: "2024-05-01T10:00:00Z"})

CUSTOMER: dict[str, Any] = {
    "type": "object",
    "required": ["customer"],
    "properties": {
        "customer": {
            "type": "object",
            "required": ["id", "profile"],
            "properties": {
                "id": {"type": "string", "format": "uuid", "readOnly": True},
                "profile": {
                    "type": "object",
                    "required": ["name", "status"],
                    "properties": {
                        "name": {"type": "string", "minLength": 1},
                        "status": {"enum": ["active", "paused", "archived"]},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "age": {"type": "integer", "minimum": 0, "maximum": 150},
                    },
                },
                "address": {
                    "type": "object",
                    "required": ["city"],
                    "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                },
            },
        }
    },
}


def filled_customer(**profile: Any) -> dict[str, Any]:
    template = schema_to_template(CUSTOMER)
    template["customer"]["profile"].update(profile)
    return template


def error_of(filled: Any, schema: dict[str, Any], **kwargs: Any) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        template_to_payload(filled, schema, **kwargs)
    return info.value


def test_a_filled_template_becomes_the_payload() -> None:
    filled = filled_customer(name="Ada", status="active", tags=["vip", "{OPTIONAL|string}"])
    payload = template_to_payload(filled, CUSTOMER, auto=FIXED)
    # the untouched optional address (with its FILL city) and age are dropped; id is generated
    assert payload == {
        "customer": {"id": UUID, "profile": {"name": "Ada", "status": "active", "tags": ["vip"]}}
    }
    validator(CUSTOMER).validate(payload)


def test_a_required_token_left_unfilled_names_its_path() -> None:
    err = error_of(filled_customer(status="paused"), CUSTOMER, auto=FIXED)
    assert err.reason == "unfilled" and err.path == "$.customer.profile.name"
    assert "{FILL|string" in err.problem


def test_a_touched_optional_object_must_be_complete() -> None:
    filled = filled_customer(name="Ada", status="active")
    filled["customer"]["address"]["zip"] = "75001"
    err = error_of(filled, CUSTOMER, auto=FIXED)
    assert err.reason == "unfilled" and err.path == "$.customer.address.city"


def test_a_missing_required_key_is_named_with_its_template() -> None:
    filled = filled_customer(name="Ada", status="active")
    del filled["customer"]["profile"]["status"]
    err = error_of(filled, CUSTOMER, auto=FIXED)
    assert err.reason == "missing" and err.path == "$.customer.profile.status"
    assert "{FILL_ENUM|active|paused|archived}" in err.hint


@pytest.mark.parametrize(
    ("profile", "code", "path", "hint"),
    [
        ({"status": "deleted"}, "enum", "$.customer.profile.status", "active, paused, archived"),
        ({"age": 151}, "range", "$.customer.profile.age", "<= 150"),
        ({"age": "7"}, "type", "$.customer.profile.age", "integer"),
        ({"name": ""}, "length", "$.customer.profile.name", "at least 1"),
        ({"tags": ["ok", 5]}, "type", "$.customer.profile.tags[1]", "string"),
        ({"tags": "vip"}, "type", "$.customer.profile.tags", "array"),
    ],
)
def test_a_value_that_breaks_its_token_is_refused(profile, code, path, hint) -> None:
    base = {"name": "Ada", "status": "active"}
    err = error_of(filled_customer(**{**base, **profile}), CUSTOMER, auto=FIXED)
    assert (err.reason, err.path) == (code, path)
    assert hint in err.hint


def test_integral_numbers_and_enum_text_are_read_as_their_type() -> None:
    schema = {
        "type": "object",
        "properties": {"n": {"type": "integer"}, "e": {"type": "integer", "enum": [1, 2]}},
    }
    assert template_to_payload({"n": 3.0, "e": "2"}, schema) == {"n": 3, "e": 2}


def test_auto_values_come_from_the_provider_or_the_default() -> None:
    schema = {
        "type": "object",
        "required": ["id", "kind", "at"],
        "properties": {
            "id": {"type": "string", "format": "uuid", "readOnly": True},
            "kind": {"const": "order"},
            "at": {"type": "string", "format": "date-time", "x-forge-auto": True},
            "etag": {"type": "string", "readOnly": True},
        },
    }
    template = schema_to_template(schema)
    assert template_to_payload(template, schema, auto=FIXED) == {
        "id": UUID,
        "kind": "order",
        "at": "2024-05-01T10:00:00Z",
    }
    err = error_of(template, schema)
    assert err.reason == "auto" and err.path == "$.id" and "auto=" in err.hint
    err = error_of(template, schema, auto=AutoByFormat({}))
    assert err.reason == "auto" and "cannot make" in err.problem


def test_one_of_accepts_the_chosen_alternative_in_either_form() -> None:
    schema = {
        "type": "object",
        "required": ["pay"],
        "properties": {
            "pay": {
                "oneOf": [
                    {
                        "type": "object",
                        "required": ["iban"],
                        "properties": {"iban": {"type": "string"}},
                    },
                    {
                        "type": "object",
                        "required": ["card"],
                        "properties": {"card": {"type": "string"}},
                    },
                ]
            }
        },
    }
    template = schema_to_template(schema)
    assert template["pay"] == {ONE_OF: [{"iban": "{FILL|string}"}, {"card": "{FILL|string}"}]}
    assert template_to_payload({"pay": {"card": "4242"}}, schema) == {"pay": {"card": "4242"}}
    kept = {"pay": {ONE_OF: [{"iban": "{FILL|string}"}, {"card": "4242"}]}}
    assert template_to_payload(kept, schema) == {"pay": {"card": "4242"}}
    both = {"pay": {ONE_OF: [{"iban": "DE00"}, {"card": "4242"}]}}
    assert error_of(both, schema).reason == "one_of"
    assert error_of(template, schema).reason == "unfilled"
    err = error_of({"pay": {"cash": 5}}, schema)
    assert err.reason == "one_of" and err.path == "$.pay"


def test_the_discriminator_picks_the_alternative() -> None:
    doc = {
        "openapi": "3.0.3",
        "components": {
            "schemas": {
                "A": {
                    "type": "object",
                    "properties": {"t": {"type": "string"}, "v": {"type": "string"}},
                },
                "B": {
                    "type": "object",
                    "properties": {"t": {"type": "string"}, "v": {"type": "integer"}},
                },
            }
        },
    }
    schema = {
        "oneOf": [{"$ref": "#/components/schemas/A"}, {"$ref": "#/components/schemas/B"}],
        "discriminator": {"propertyName": "t", "mapping": {"b": "#/components/schemas/B"}},
    }
    assert template_to_payload({"t": "b", "v": 5}, schema, document=doc) == {"t": "b", "v": 5}
    # the discriminator says B, so a string v is an error about B, not a silent switch to A
    err = error_of({"t": "b", "v": "five"}, schema, document=doc)
    assert err.reason == "type" and err.path == "$.v"
    template = schema_to_template(schema, document=doc)
    chosen = template[ONE_OF][0]  # the model keeps A's discriminator token as it is
    chosen["v"] = "x"
    assert template_to_payload(chosen, schema, document=doc) == {"t": "A", "v": "x"}


def test_maps_take_real_keys() -> None:
    schema = {
        "type": "object",
        "properties": {"labels": {"type": "object", "additionalProperties": {"type": "string"}}},
        "patternProperties": {"^x-": {"type": "integer"}},
    }
    template = schema_to_template(schema)
    assert template == {
        "labels": {"{KEY|string}": "{OPTIONAL|string}"},
        "{KEY|string|pattern:^x-}": "{FILL|integer}",
    }
    filled = {"labels": {"env": "prod", "{KEY|string}": "{OPTIONAL|string}"}, "x-rate": 5}
    assert template_to_payload(filled, schema) == {"labels": {"env": "prod"}, "x-rate": 5}
    err = error_of({"labels": {"{KEY|string}": "prod"}}, schema)
    assert err.reason == "unfilled" and "real key" in err.hint
    err = error_of({"x-rate": "fast"}, schema)
    assert err.reason == "type" and err.path == '$["x-rate"]'


def test_key_rules_are_enforced() -> None:
    schema = {
        "type": "object",
        "additionalProperties": {"type": "integer"},
        "propertyNames": {"pattern": "^[a-z]+$"},
    }
    assert template_to_payload({"ok": 1}, schema) == {"ok": 1}
    assert error_of({"Not OK": 1}, schema).reason == "key"


def test_embedded_json_is_serialized_back() -> None:
    schema = {
        "type": "object",
        "properties": {
            "config": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {
                    "type": "object",
                    "required": ["depth"],
                    "properties": {
                        "depth": {"type": "integer"},
                        "tags": {"type": "array", "items": {"type": "string"}},
                    },
                },
            }
        },
    }
    assert schema_to_template(schema) == {
        "config": {"depth": "{FILL|integer}", "tags": ["{OPTIONAL|string}"]}
    }
    payload = template_to_payload({"config": {"depth": 2, "tags": ["a"]}}, schema)
    assert payload == {"config": '{"depth":2,"tags":["a"]}'}
    # JSON text is accepted too, and checked against the nested schema
    assert template_to_payload({"config": '{"depth": 3}'}, schema) == {"config": '{"depth":3}'}
    assert error_of({"config": '{"depth": "deep"}'}, schema).path == "$.config.depth"
    assert error_of({"config": "{not json"}, schema).reason == "json"


def test_synonyms_rename_keys_in_either_direction() -> None:
    schema = {
        "type": "object",
        "required": ["customer_id"],
        "properties": {"customer_id": {"type": "string"}, "note": {"type": "string"}},
    }
    synonyms = {"user_id": "customer_id", "memo": "note"}
    assert template_to_payload({"user_id": "u1"}, schema, synonyms=synonyms) == {
        "customer_id": "u1"
    }
    reverse = {"customer_id": "user_id"}
    assert template_to_payload({"user_id": "u1"}, schema, synonyms=reverse) == {"customer_id": "u1"}
    err = error_of({"user_id": "u1", "customer_id": "u2"}, schema, synonyms=synonyms)
    assert err.reason == "synonym" and "keep only 'customer_id'" in err.hint


def test_unknown_keys_are_refused_with_a_suggestion() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "email": {"type": "string"}},
    }
    err = error_of({"nmae": "Ada"}, schema)
    assert err.reason == "unknown" and err.path == "$.nmae" and "did you mean 'name'" in err.hint
    open_schema = {**schema, "additionalProperties": True}
    assert template_to_payload({"nmae": "Ada"}, open_schema) == {"nmae": "Ada"}


def test_array_counts_and_uniqueness() -> None:
    schema = {
        "type": "array",
        "items": {"type": "integer"},
        "minItems": 1,
        "maxItems": 2,
        "uniqueItems": True,
    }
    assert template_to_payload([1, 2], schema) == [1, 2]
    assert error_of([], schema).reason == "count"
    assert error_of([1, 2, 3], schema).reason == "count"
    err = error_of([1, 1], schema)
    assert err.reason == "unique" and err.path == "$[1]"


def test_a_filled_recursive_marker_is_read_with_the_referenced_schema() -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "Node": {
                    "type": "object",
                    "required": ["v"],
                    "properties": {
                        "v": {"type": "integer"},
                        "kids": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}},
                    },
                }
            }
        },
    }
    schema = {"$ref": "#/components/schemas/Node"}
    assert schema_to_template(schema, document=doc) == {
        "v": "{FILL|integer}",
        "kids": [REF_CIRCULAR],
    }
    filled = {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}, REF_CIRCULAR]}
    payload = template_to_payload(filled, schema, document=doc)
    assert payload == {"v": 1, "kids": [{"v": 2, "kids": [{"v": 3}]}]}
    err = error_of({"v": 1, "kids": [{"v": 2, "kids": [{"v": "three"}]}]}, schema, document=doc)
    assert err.path == "$.kids[0].kids[0].v"


def test_nullable_values() -> None:
    doc = {"openapi": "3.0.3"}
    schema = {
        "type": "object",
        "properties": {
            "s": {"type": "string", "nullable": True},
            "o": {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}},
            "t": {"type": "string"},
        },
    }
    assert template_to_payload({"s": None, "o": None}, schema, document=doc) == {
        "s": None,
        "o": None,
    }
    err = error_of({"t": None}, schema, document=doc)
    assert err.reason == "type" and "null" in err.problem


def test_bytes_are_read_as_json_text() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert template_to_payload(json.dumps({"a": 1}).encode(), schema) == {"a": 1}
    assert error_of(b'{"a": 1', schema).reason == "json"


def test_arguments_are_checked() -> None:
    schema = {"type": "string"}
    assert error_of("x", schema, synonyms={"a": 1}).path == "synonyms"
    assert error_of("x", schema, auto=object()).path == "auto"


def test_embedded_json_without_a_content_schema_takes_any_json() -> None:
    schema = {"type": "string", "x-serialization": "json"}
    assert schema_to_template(schema) == "{FILL|string}"
    assert template_to_payload({"a": [1]}, schema) == '{"a":[1]}'
    assert template_to_payload("[1, 2]", schema) == "[1,2]"
    assert template_to_payload("plain words", schema) == '"plain words"'


def test_defaults_are_left_to_the_server_when_optional() -> None:
    schema = {
        "type": "object",
        "required": ["limit"],
        "properties": {
            "limit": {"type": "integer", "default": 10},
            "sort": {"type": "string", "default": "asc"},
        },
    }
    template = schema_to_template(schema)
    assert template == {
        "limit": "{FILL|integer|default:10}",
        "sort": '{OPTIONAL|string|default:"asc"}',
    }
    assert template_to_payload({**template, "limit": 5}, schema) == {"limit": 5}
    # required stays required: the default is shown, never silently chosen for the model
    assert error_of(template, schema).path == "$.limit"


def test_a_template_made_with_another_max_depth_still_converts() -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "L1": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/components/schemas/L2"}},
                },
                "L2": {"type": "object", "properties": {"leaf": {"type": "string"}}},
            }
        },
    }
    schema = {"$ref": "#/components/schemas/L1"}
    shallow = schema_to_template(schema, document=doc, max_depth=1)
    assert shallow == {"next": "{REF: max_depth}"}
    assert template_to_payload(shallow, schema, document=doc) == {}
    assert template_to_payload({"next": {"leaf": "x"}}, schema, document=doc) == {
        "next": {"leaf": "x"}
    }


def test_required_read_only_fields_are_generated() -> None:
    schema = {
        "type": "object",
        "required": ["id"],
        "properties": {"id": {"type": "string", "format": "uuid", "readOnly": True}},
    }
    payload = template_to_payload(schema_to_template(schema), schema, auto=FIXED)
    assert payload == {"id": UUID}
    validator(schema).validate(payload)
