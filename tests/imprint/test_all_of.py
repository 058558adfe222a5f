"""allOf merging: diamonds and redeclared refs are not cycles; the polymorphism pattern works."""

from __future__ import annotations

from typing import Any

from compiler.imprint import ONE_OF, schema_to_template, template_to_payload

REF = "#/components/schemas/"


def _doc(schemas: dict[str, Any]) -> dict[str, Any]:
    return {"openapi": "3.0.3", "paths": {}, "components": {"schemas": schemas}}


def _ref(name: str) -> dict[str, str]:
    return {"$ref": REF + name}


def _obj(required: list[str] | None = None, **props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or []}


def test_a_subtype_redeclaring_its_bases_ref_property_is_not_circular() -> None:
    doc = _doc(
        {
            "User": _obj(["login"], login={"type": "string"}),
            "Base": _obj(owner=_ref("User"), id={"type": "integer"}),
            "Derived": {
                "allOf": [_ref("Base"), _obj(owner=_ref("User"), extra={"type": "string"})]
            },
        }
    )
    assert schema_to_template(_ref("Derived"), document=doc) == {
        "owner": {"login": "{FILL|string}"},
        "id": "{OPTIONAL|integer}",
        "extra": "{OPTIONAL|string}",
    }


def test_a_diamond_merges_the_shared_base_once() -> None:
    doc = {
        "$defs": {
            "Base": _obj(["id"], id={"type": "string"}),
            "A": {"allOf": [{"$ref": "#/$defs/Base"}, _obj(a={"type": "integer"})]},
            "B": {"allOf": [{"$ref": "#/$defs/Base"}, _obj(b={"type": "integer"})]},
            "C": {
                "allOf": [
                    {"$ref": "#/$defs/A"},
                    {"$ref": "#/$defs/B"},
                    _obj(["c"], c={"type": "boolean"}),
                ]
            },
        }
    }
    expected = {
        "id": "{FILL|string}",
        "a": "{OPTIONAL|integer}",
        "b": "{OPTIONAL|integer}",
        "c": "{FILL|boolean}",
    }
    assert schema_to_template({"$ref": "#/$defs/C"}, document=doc) == expected
    nested = {"type": "object", "properties": {"x": {"$ref": "#/$defs/C"}}}
    assert schema_to_template(nested, document=doc) == {"x": expected}
    filled = {"x": {"id": "1", "a": 1, "b": 2, "c": True}}
    assert template_to_payload(filled, nested, document=doc) == filled
    twice = {"allOf": [{"$ref": "#/$defs/Base"}, {"$ref": "#/$defs/Base"}]}
    assert schema_to_template(twice, document=doc) == {"id": "{FILL|string}"}


def _pets() -> dict[str, Any]:
    return _doc(
        {
            "Pet": {
                **_obj(["petType"], petType={"type": "string"}, name={"type": "string"}),
                "discriminator": {"propertyName": "petType"},
                "oneOf": [_ref("Cat"), _ref("Dog")],
            },
            "Cat": {"allOf": [_ref("Pet"), _obj(lives={"type": "integer"})]},
            "Dog": {"allOf": [_ref("Pet"), _obj(bark={"type": "boolean"})]},
        }
    )


def test_a_base_listing_its_subtypes_in_one_of_works_both_ways() -> None:
    doc = _pets()
    cat = {
        "petType": '{AUTO|string|default:"Cat"}',
        "name": "{OPTIONAL|string}",
        "lives": "{OPTIONAL|integer}",
    }
    dog = {
        "petType": '{AUTO|string|default:"Dog"}',
        "name": "{OPTIONAL|string}",
        "bark": "{OPTIONAL|boolean}",
    }
    assert schema_to_template(_ref("Pet"), document=doc) == {ONE_OF: [cat, dog]}
    assert schema_to_template(_ref("Cat"), document=doc) == cat
    filled = {"petType": "Cat", "name": "x", "lives": 9}
    assert template_to_payload(filled, _ref("Pet"), document=doc) == filled
    assert template_to_payload({"bark": True}, _ref("Dog"), document=doc) == {
        "petType": "Dog",
        "bark": True,
    }


def test_a_real_all_of_cycle_is_still_circular() -> None:
    doc = _doc({"A": {"allOf": [_ref("B")]}, "B": {"allOf": [_ref("A"), _obj(b={})]}})
    schema = {"type": "object", "properties": {"a": _ref("A")}}
    assert schema_to_template(schema, document=doc) == {"a": "{REF: circular}"}
