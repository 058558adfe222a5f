"""Issue §4: bad input gives a clear TemplateError every time, never a crash, hang or blow-up."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.imprint import (
    REF_MAX_DEPTH,
    TemplateError,
    encode_body,
    operation_payload,
    operation_template,
    parse_json,
    render_template,
    schema_to_template,
    template_to_payload,
)
from compiler.imprint.limits import MAX_NESTING, MAX_PROPERTIES, MAX_TEMPLATE_NODES
from tests.imprint.conftest import AUTO, load
from tests.support.timeouts import SLOW_INPUT_TIMEOUT_S


def refused(fn: Any, *args: Any, **kwargs: Any) -> TemplateError:
    with pytest.raises(TemplateError) as info:
        fn(*args, **kwargs)
    err = info.value
    assert err.reason and err.path and err.problem and err.hint
    return err


def test_malformed_json_names_line_and_column() -> None:
    err = refused(parse_json, b'{"a": 1,\n "b": }')
    assert err.reason == "json" and err.path == "line 2 column 7"


def test_non_utf8_bytes_name_the_offset() -> None:
    err = refused(parse_json, b'{"a": "caf\xe9"}')
    assert err.reason == "encoding" and "offset 10" in err.problem
    err = refused(template_to_payload, b"\xff\xfe{}", {"type": "object"})
    assert err.reason == "encoding"
    assert parse_json(b'\xef\xbb\xbf{"a": 1}') == {"a": 1}  # a UTF-8 BOM is fine


@pytest.mark.parametrize("text", ["NaN", '{"a": Infinity}'])
def test_non_json_numbers_are_refused(text: str) -> None:
    assert refused(parse_json, text).reason == "json"


def test_wrong_top_level_types() -> None:
    assert refused(parse_json, "[1]", expect="object").reason == "json"
    assert refused(schema_to_template, ["type", "object"]).reason == "schema"
    assert refused(schema_to_template, {"type": "string"}, document=[1]).path == "document"
    assert refused(operation_template, "openapi", "get", "/").path == "document"
    assert refused(template_to_payload, [1], {"type": "object"}).reason == "type"
    assert refused(schema_to_template, {"type": "string"}, max_depth=-1).path == "max_depth"
    whole_document = {"openapi": "3.0.3", "paths": {}}
    assert "operation_template" in refused(schema_to_template, whole_document).hint


@pytest.mark.parametrize(
    ("schema", "code", "path"),
    [
        ({"type": 5}, "schema", "#"),
        ({"type": "strin"}, "schema", "#"),
        ({"type": "object", "required": "name"}, "schema", "#"),
        ({"type": "object", "properties": []}, "schema", "#"),
        ({"type": "integer", "minimum": "0"}, "schema", "#"),
        ({"type": "string", "minLength": -1}, "schema", "#"),
        ({"enum": []}, "schema", "#"),
        ({"oneOf": {}}, "schema", "#"),
        ({"allOf": []}, "schema", "#"),
        ({"type": "object", "properties": {"a": 7}}, "schema", "#/properties/a"),
        ({"type": "array", "items": {"type": "integer", "maximum": True}}, "schema", "#/items"),
        ({"type": "integer", "minimum": 5, "maximum": 4}, "schema", "#"),
    ],
)
def test_malformed_schemas_name_the_place(schema: dict[str, Any], code: str, path: str) -> None:
    err = refused(schema_to_template, schema)
    assert (err.reason, err.path) == (code, path)


def test_unresolvable_refs() -> None:
    doc = {"openapi": "3.0.3", "components": {"schemas": {"Pet": {"type": "string"}}}}
    err = refused(schema_to_template, {"$ref": "#/components/schemas/Pett"}, document=doc)
    assert err.reason == "ref" and "did you mean #/components/schemas/Pet" in err.hint
    err = refused(schema_to_template, {"$ref": "other.yaml#/Pet"}, document=doc)
    assert "external" in err.problem and "bundle" in err.hint
    err = refused(schema_to_template, {"$ref": "#/components/schemas/Pet"})
    assert "document=" in err.hint  # no document given: say how to give one
    assert refused(schema_to_template, {"$ref": 5}).reason == "ref"


def test_circular_schemas() -> None:
    doc = {
        "openapi": "3.1.0",
        "components": {
            "schemas": {
                "A": {"$ref": "#/components/schemas/B"},
                "B": {"$ref": "#/components/schemas/A"},
                "Self": {"allOf": [{"$ref": "#/components/schemas/Self"}]},
            }
        },
    }
    err = refused(schema_to_template, {"$ref": "#/components/schemas/A"}, document=doc)
    assert "circular $ref chain" in err.problem
    err = refused(schema_to_template, {"$ref": "#/components/schemas/Self"}, document=doc)
    assert "only of a reference back to itself" in err.problem
    looped: dict[str, Any] = {"type": "object", "properties": {}}
    looped["properties"]["again"] = looped  # a Python-level cycle
    assert "contains itself" in refused(schema_to_template, looped).problem


def test_ten_thousand_properties() -> None:
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}}
    err = refused(schema_to_template, schema)
    assert err.reason == "limit" and f"limit {MAX_PROPERTIES}" in err.problem
    assert refused(template_to_payload, {}, schema).reason == "limit"


def test_a_payload_nested_200_deep() -> None:
    deep: Any = "leaf"
    for _ in range(200):
        deep = {"k": deep}
    free_form = {"type": "object", "properties": {"data": {"type": "object"}}}
    err = refused(template_to_payload, {"data": deep}, free_form)
    assert err.reason == "limit" and str(MAX_NESTING) in err.problem
    tree = {
        "$defs": {"n": {"type": "object", "properties": {"k": {"$ref": "#/$defs/n"}}}},
        "$ref": "#/$defs/n",
    }
    assert refused(template_to_payload, deep, tree).reason == "limit"
    assert refused(encode_body, deep, "application/x-www-form-urlencoded", {}).reason == "limit"
    assert refused(encode_body, deep, "application/json", {}).reason == "limit"
    assert refused(render_template, deep).reason == "limit"
    text = "[" * 200 + "]" * 200
    assert parse_json(text, max_nesting=256) is not None
    assert refused(template_to_payload, text.encode(), {"type": "array"}).reason == "limit"


def test_hostile_nesting_is_refused_before_decoding() -> None:
    text = "[" * 100_000 + "]" * 100_000
    err = refused(parse_json, text)
    assert err.reason == "limit" and "100000 levels" in err.problem


def test_a_schema_nested_200_deep() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        schema = {"type": "object", "properties": {"k": schema}}
    assert refused(schema_to_template, schema).reason == "limit"


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_fan_out_through_distinct_refs_is_bounded() -> None:
    # Each level references the next twice: 2**20 leaves if expanded naively.
    schemas = {
        f"L{i}": {
            "type": "object",
            "properties": {"a": {"$ref": f"#/$defs/L{i + 1}"}, "b": {"$ref": f"#/$defs/L{i + 1}"}},
        }
        for i in range(20)
    }
    schemas["L20"] = {"type": "string"}
    root = {"$defs": schemas, "$ref": "#/$defs/L0"}
    deep = schema_to_template(root, max_depth=30)
    # Past the node budget, further refs stop at the marker instead of failing the template.
    assert _count_markers(deep, REF_MAX_DEPTH) > 0
    assert _count_markers(deep, None) <= MAX_TEMPLATE_NODES
    marked = _path_to(deep, REF_MAX_DEPTH)
    filled: Any = "x"
    for key in reversed(marked):
        filled = {key: filled}
    # a filled marker converts like any other part, with a node budget of its own
    assert template_to_payload(filled, root, max_depth=30) == filled
    # the default max_depth keeps the same schema small enough to template
    assert schema_to_template(root)["a"]["b"]


def test_inline_fan_out_is_refused_with_an_accurate_hint() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(20):  # the same dict twice per level: 2**20 leaves, no $ref anywhere
        schema = {"type": "object", "properties": {"a": schema, "b": schema}}
    err = refused(schema_to_template, schema)
    assert err.reason == "limit" and str(MAX_TEMPLATE_NODES) in err.problem
    assert "lower max_depth" not in err.hint and "$ref" in err.hint


def _count_markers(template: Any, marker: str | None) -> int:
    if isinstance(template, dict):
        return sum(_count_markers(v, marker) for v in template.values())
    if isinstance(template, list):
        return sum(_count_markers(v, marker) for v in template)
    return 1 if marker is None or template == marker else 0


def _path_to(template: Any, marker: str) -> list[str]:
    if isinstance(template, dict):
        for key, value in template.items():
            if value == marker:
                return [key]
            found = _path_to(value, marker)
            if found:
                return [key, *found]
    return []


def test_a_huge_enum_is_refused() -> None:
    assert refused(schema_to_template, {"enum": list(range(5000))}).reason == "limit"


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.sampled_from(
                [
                    "type",
                    "properties",
                    "items",
                    "$ref",
                    "allOf",
                    "oneOf",
                    "anyOf",
                    "enum",
                    "required",
                    "additionalProperties",
                    "minimum",
                    "pattern",
                    "const",
                    "nullable",
                    "x",
                    "format",
                ]
            ),
            inner,
            max_size=5,
        )
    ),
    max_leaves=20,
)
FUZZ = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(schema=json_values, filled=json_values)
def test_arbitrary_json_as_schema_or_filled_value_never_crashes(schema: Any, filled: Any) -> None:
    try:
        schema_to_template(schema)
    except TemplateError as err:
        assert err.path and err.hint
    try:
        template_to_payload(filled, schema)
    except TemplateError as err:
        assert err.path and err.hint


FUZZED_BODIES = [
    ("oas31-train-travel.json", "post", "/bookings/{bookingId}/payment"),
    ("oas30-schema-circular.json", "put", "/circular"),
    ("oas30-complex-nesting.json", "post", "/multischema/of-everything"),
    ("swagger2-petstore.json", "post", "/pet"),
]


@pytest.mark.parametrize(("name", "method", "path"), FUZZED_BODIES)
@FUZZ
@given(filled=json_values | st.dictionaries(st.integers(), st.integers(), min_size=1))
def test_arbitrary_filled_values_for_real_bodies_never_crash(
    name: str, method: str, path: str, filled: Any
) -> None:
    doc = load(name)
    try:
        operation_payload(doc, method, path, filled, auto=AUTO)
    except TemplateError as err:
        assert err.path.startswith("$") and err.hint


@FUZZ
@given(data=st.binary(max_size=64))
def test_arbitrary_bytes_never_crash_the_parser(data: bytes) -> None:
    try:
        parse_json(data)
    except TemplateError as err:
        assert err.reason in ("json", "encoding", "limit")


@pytest.mark.parametrize("closed", [False, True])
@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_an_unterminated_string_of_escaped_quotes_is_refused_in_linear_time(closed: bool) -> None:
    text = '"' + '\\"' * 160_000 + ('"' if closed else "")
    if closed:
        assert parse_json(text) == '"' * 160_000
    else:
        assert refused(parse_json, text).reason == "json"
        refused(parse_json, text + "\\")


@pytest.mark.parametrize("data", ['{"a": 1' + "0" * 5000 + "}", b"[1" + b"0" * 5000 + b"]"])
def test_an_integer_past_the_digit_limit_is_a_json_error(data: str | bytes) -> None:
    assert refused(parse_json, data).reason == "json"
    if isinstance(data, bytes):  # bytes given as the filled template are read as JSON text
        assert refused(template_to_payload, data, {}).reason == "json"


def test_huge_integers_in_values_and_bounds_are_handled() -> None:
    big = 10**400
    assert template_to_payload(big, {"type": "number", "multipleOf": 0.5}) == big
    err = refused(template_to_payload, 3, {"type": "integer", "multipleOf": 10**400})
    assert err.reason == "range"
    assert (
        schema_to_template({"type": "integer", "maximum": big}) == f"{{FILL|integer|range:..{big}}}"
    )
    refused(schema_to_template, {"type": "integer", "maximum": 10**5000})
    assert refused(template_to_payload, 10**5000, {"type": "string"}).reason == "range"
    for media in ("application/json", "application/x-www-form-urlencoded"):
        assert refused(encode_body, {"a": 10**5000}, media, {}).reason == "range"


def test_steps_are_exact_decimals() -> None:
    assert template_to_payload(0.07, {"type": "number", "multipleOf": 0.01}) == 0.07
    assert template_to_payload(1.1, {"type": "number", "multipleOf": 0.1}) == 1.1
    tenth = {"type": "number", "multipleOf": 0.1}
    assert refused(template_to_payload, 0.75, tenth).reason == "range"


@pytest.mark.parametrize(
    "media_type", ["application/json", "application/x-www-form-urlencoded", "multipart/form-data"]
)
def test_a_lone_surrogate_is_refused_before_the_wire(media_type: str) -> None:
    filled = parse_json('{"a": "\\ud800"}')
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert refused(template_to_payload, filled, schema).reason == "encoding"
    assert refused(template_to_payload, filled, {}).reason == "encoding"
    assert refused(encode_body, filled, media_type, {}).reason == "encoding"
    assert refused(encode_body, {"\udfff": "x"}, media_type, {}).reason == "encoding"


@pytest.mark.parametrize(("method", "path"), [("get", None), (None, "/pets"), ("get", 5)])
def test_a_method_or_path_of_the_wrong_type_is_an_argument_error(method: Any, path: Any) -> None:
    doc = {"openapi": "3.0.3", "paths": {"/pets": {"get": {}}}}
    assert refused(operation_template, doc, method, path).reason == "argument"


def test_a_large_float_multiple_whose_text_drops_digits_is_accepted():
    # 2**49 + 0.25 is exact in binary, but repr() prints it as ...312.2
    from compiler.imprint import template_to_payload

    schema = {"type": "number", "multipleOf": 0.25}
    assert template_to_payload(562949953421312.25, schema) == 562949953421312.25
