"""Choosing a oneOf/anyOf alternative for a filled value stays linear and bounded."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.imprint import TemplateError, template_to_payload
from compiler.imprint import payload as payload_module


def _tree(options: int) -> dict[str, Any]:
    """Node: anyOf of `options` object shapes that all accept {"children": [Node, ...]}."""
    names = "abcdefgh"[:options]
    defs: dict[str, Any] = {
        "Node": {"anyOf": [{"$ref": f"#/$defs/{n.upper()}"} for n in names]},
    }
    for n in names:
        defs[n.upper()] = {
            "type": "object",
            "properties": {
                "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
                n: {"type": "string"},
            },
        }
    return {"$defs": defs, "$ref": "#/$defs/Node"}


def _nest(levels: int) -> dict[str, Any]:
    value: dict[str, Any] = {"a": "x"}
    for _ in range(levels):
        value = {"children": [value]}
    return value


def test_recursive_choices_are_converted_in_linear_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # Trying every alternative of every level in full took 3**levels conversions.
    monkeypatch.setattr(payload_module, "MAX_CONVERSION_STEPS", 2_000)
    value = _nest(25)
    assert template_to_payload(value, _tree(3)) == value


def test_a_value_too_deep_for_every_alternative_fails_at_once() -> None:
    with pytest.raises(TemplateError) as caught:
        template_to_payload(_nest(200), _tree(3))
    assert caught.value.reason == "limit"


def test_the_conversion_has_a_work_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(payload_module, "MAX_CONVERSION_STEPS", 50)
    schema = {"type": "array", "items": {"type": "integer"}}
    with pytest.raises(TemplateError) as caught:
        template_to_payload(list(range(100)), schema)
    assert caught.value.reason == "limit"


def test_closed_alternatives_are_told_apart_by_their_keys_and_constants() -> None:
    def shape(kind: str, field: str) -> dict[str, Any]:
        return {
            "type": "object",
            "properties": {"kind": {"const": kind}, field: {"type": "string"}},
            "required": ["kind", field],
            "additionalProperties": False,
        }

    schema = {"oneOf": [shape("a", "x"), shape("b", "x"), shape("c", "y")]}
    assert template_to_payload({"kind": "b", "x": "1"}, schema) == {"kind": "b", "x": "1"}
    assert template_to_payload({"y": "1"}, schema) == {"kind": "c", "y": "1"}


def test_a_reference_to_itself_inside_a_choice_does_not_loop() -> None:
    schema = {
        "$defs": {"N": {"anyOf": [{"$ref": "#/$defs/N"}, {"type": "string"}]}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/N"}},
    }
    assert template_to_payload({"n": "x"}, schema) == {"n": "x"}
    with pytest.raises(TemplateError):
        template_to_payload({"n": 5}, schema)
