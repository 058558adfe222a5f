"""encode_body: JSON, form-urlencoded (bracket notation, checked against urllib), multipart."""

from __future__ import annotations

import json
from email import policy
from email.parser import BytesParser
from typing import Any
from urllib.parse import parse_qsl, urlencode

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.imprint import (
    TemplateError,
    content_type_header,
    encode_body,
    operation_payload,
    operation_template,
    request_body,
)
from tests.imprint.conftest import load

FORM = "application/x-www-form-urlencoded"
MULTIPART = "multipart/form-data"


def test_json_is_compact_utf8_in_payload_order() -> None:
    payload = {"b": 1, "a": ["é", None, True]}
    body = encode_body(payload, "application/json; charset=utf-8", {})
    assert body == '{"b":1,"a":["é",null,true]}'.encode()
    assert encode_body([1], "application/merge-patch+json", {}) == b"[1]"


def test_form_uses_brackets_like_stripe() -> None:
    payload = {
        "amount": 2000,
        "capture": False,
        "metadata": {"order_id": "6735", "note": "a b&c"},
        "expand": ["customer", "invoice"],
        "items": [{"price": "p_1", "quantity": 2}],
        "description": None,
        "ratio": 0.5,
    }
    body = encode_body(payload, FORM, {}).decode("ascii")
    pairs = [
        ("amount", "2000"),
        ("capture", "false"),
        ("metadata[order_id]", "6735"),
        ("metadata[note]", "a b&c"),
        ("expand[]", "customer"),
        ("expand[]", "invoice"),
        ("items[0][price]", "p_1"),
        ("items[0][quantity]", "2"),
        ("description", ""),
        ("ratio", "0.5"),
    ]
    assert body == urlencode(pairs)
    assert parse_qsl(body, keep_blank_values=True) == pairs


scalars = st.one_of(st.text(max_size=6), st.integers(), st.booleans())
nested = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, min_size=1, max_size=3)
        | st.dictionaries(st.text(min_size=1, max_size=4), inner, min_size=1, max_size=3)
    ),
    max_leaves=8,
)


@given(st.dictionaries(st.text(min_size=1, max_size=5), nested, max_size=4))
def test_form_encoding_matches_urlencode_for_any_payload(payload: dict[str, Any]) -> None:
    body = encode_body(payload, FORM, {}).decode("ascii")
    decoded = parse_qsl(body, keep_blank_values=True)
    assert body == urlencode(decoded)
    assert len(decoded) == sum(_leaf_count(v) for v in payload.values())


def _leaf_count(value: Any) -> int:
    if isinstance(value, dict):
        return sum(_leaf_count(v) for v in value.values()) or 1
    if isinstance(value, list):
        return sum(_leaf_count(v) for v in value) or 1
    return 1


def _parts(body: bytes, media_type: str) -> list[Any]:
    header = f"Content-Type: {content_type_header(media_type, body)}\r\n\r\n".encode()
    message = BytesParser(policy=policy.HTTP).parsebytes(header + body)
    assert message.is_multipart() and not message.defects
    return list(message.iter_parts())


def test_multipart_fields_files_and_nested_objects() -> None:
    schema = {"properties": {"avatar": {"type": "string", "format": "binary"}}}
    payload = {
        "name": "Ada",
        "age": 36,
        "tags": ["a", "b"],
        "meta": {"k": [1, 2]},
        "avatar": "PNGDATA",
        "raw": b"\x00\xff",
        "skip": None,
    }
    body = encode_body(payload, MULTIPART, schema)
    parts = _parts(body, MULTIPART)
    seen = [
        (p.get_param("name", header="content-disposition"), p.get_content_type()) for p in parts
    ]
    assert seen == [
        ("name", "text/plain"),
        ("age", "text/plain"),
        ("tags", "text/plain"),
        ("tags", "text/plain"),
        ("meta", "application/json"),
        ("avatar", "application/octet-stream"),
        ("raw", "application/octet-stream"),
    ]
    assert parts[4].get_payload(decode=True) == b'{"k":[1,2]}'
    assert parts[5].get_filename() == "avatar"
    assert parts[6].get_payload(decode=True) == b"\x00\xff"


def test_multipart_boundary_is_deterministic_and_content_derived() -> None:
    first = encode_body({"a": "1"}, MULTIPART, {})
    assert first == encode_body({"a": "1"}, MULTIPART, {})
    other = encode_body({"a": "2"}, MULTIPART, {})
    assert content_type_header(MULTIPART, first) != content_type_header(MULTIPART, other)
    assert content_type_header(MULTIPART, first).startswith("multipart/form-data; boundary=forge-")
    assert content_type_header(FORM, b"a=1") == FORM


def test_multipart_escapes_quotes_in_names() -> None:
    body = encode_body({'we"ird\nname': "v"}, MULTIPART, {})
    assert b'name="we%22ird%0Aname"' in body


def test_form_bodies_from_documents_round_trip_through_the_wire() -> None:
    doc = load("oas30-star-trek.json")
    result = operation_template(doc, "post", "/animal/search")
    filled = {**result.template, "name": "Tribble", "feline": True}
    payload = operation_payload(doc, "post", "/animal/search", filled)
    assert payload == {"name": "Tribble", "feline": True}
    body = encode_body(payload, result.media_type or "", {})
    assert parse_qsl(body.decode()) == [("name", "Tribble"), ("feline", "true")]


@pytest.mark.parametrize(
    ("payload", "media_type", "code"),
    [
        ([1, 2], FORM, "media_type"),
        ("text", MULTIPART, "media_type"),
        ({"a": 1}, "application/xml", "media_type"),
        ({"f": b"bytes"}, FORM, "type"),
        ({"x": float("nan")}, "application/json", "type"),
    ],
)
def test_payloads_a_media_type_cannot_carry_are_refused(payload, media_type, code) -> None:
    with pytest.raises(TemplateError) as info:
        encode_body(payload, media_type, {})
    assert info.value.reason == code


def test_text_and_octet_stream() -> None:
    assert encode_body("héllo", "text/plain", {}) == "héllo".encode()
    assert encode_body(b"\x01", "application/octet-stream", {}) == b"\x01"
    assert json.loads(encode_body({"a": 1}, "application/vnd.api+json", {})) == {"a": 1}


def test_form_encoding_errors_name_a_json_path() -> None:
    with pytest.raises(TemplateError) as top:
        encode_body({"f": b"x"}, "application/x-www-form-urlencoded", {})
    assert top.value.path == "$.f"
    with pytest.raises(TemplateError) as nested:
        encode_body({"a": {"b c": [b"x"]}}, "application/x-www-form-urlencoded", {})
    assert nested.value.path == '$.a["b c"]'


def test_multipart_file_fields_behind_refs_stay_files() -> None:
    doc = {
        "openapi": "3.0.3",
        "paths": {
            "/up": {
                "post": {
                    "requestBody": {
                        "content": {MULTIPART: {"schema": {"$ref": "#/components/schemas/Up"}}}
                    }
                }
            }
        },
        "components": {
            "schemas": {
                "File": {"type": "string", "format": "binary"},
                "Meta": {"properties": {"scan": {"$ref": "#/components/schemas/File"}}},
                "Up": {
                    "allOf": [{"$ref": "#/components/schemas/Meta"}],
                    "properties": {
                        "file": {"type": "string", "format": "binary"},
                        "pages": {"type": "array", "items": {"$ref": "#/components/schemas/File"}},
                        "note": {"type": "string"},
                    },
                },
            }
        },
    }
    filled = {"file": "DATA", "pages": ["P1"], "scan": "S", "note": "hi"}
    payload = operation_payload(doc, "post", "/up", filled)
    body = request_body(doc, "post", "/up")
    assert body is not None
    encoded = encode_body(payload, body.media_type, body.schema, document=doc)
    parts = _parts(encoded, MULTIPART)
    files = {p.get_param("name", header="content-disposition"): p.get_filename() for p in parts}
    assert files == {"file": "file", "pages": "pages", "scan": "scan", "note": None}
