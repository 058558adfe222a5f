"""Hostile or broken input ends in a clear error, never a crash, a hang or a memory blow-up."""

import pytest
from pydantic import ValidationError

from compiler.ladder import LadderContract, LadderLimits, run_ladder
from tests.ladder.helpers import contract, entry
from tests.support.timeouts import SLOW_INPUT_TIMEOUT_S


def _only_error(result):
    errors = [f for f in result.findings if f.severity == "error"]
    assert len(errors) == 1, result.findings
    return errors[0]


def test_malformed_json_text_is_an_l0_error_with_line_and_column():
    result = run_ladder('{"entry_id": "e-1",\n "hours": }', contract())
    error = _only_error(result)
    assert (result.ok, result.blocked_by, result.payload) == (False, "L0", None)
    assert error.stage == "L0"
    assert "malformed JSON at line 2 column 11" in error.message


def test_malformed_json_stops_the_run_in_report_mode_too():
    result = run_ladder(b"[1, 2", contract(), mode="report")
    assert not result.ok and result.blocked_by == "L0" and result.stages_run == ["L3"]


def test_wrong_top_level_type_is_an_error_that_blocks():
    result = run_ladder("[1, 2, 3]", contract())
    error = _only_error(result)
    assert error.stage == "L0" and error.path == ""
    assert error.message == "expected a top-level object, got array"
    assert result.blocked_by == "L0" and result.stages_run == ["L3", "L0"]


def test_a_top_level_scalar_is_refused_too():
    assert _only_error(run_ladder("42", contract())).message.endswith("got integer")


def test_non_utf8_bytes_name_the_offending_byte():
    result = run_ladder(b'{"entry_id": "caf\xe9"}', contract())
    error = _only_error(result)
    assert error.stage == "L0"
    assert "not valid UTF-8: byte 0xe9 at offset 17" in error.message
    assert result.payload is None


def test_a_utf8_byte_order_mark_is_accepted():
    import json

    result = run_ladder(b"\xef\xbb\xbf" + json.dumps(entry()).encode(), contract())
    assert result.ok, result.findings


def _nested(depth: int) -> dict:
    value: dict = {"leaf": 1}
    for _ in range(depth):
        value = {"child": value}
    return value


def test_a_payload_nested_200_deep_is_refused_with_its_path():
    result = run_ladder(_nested(200), contract())
    error = _only_error(result)
    assert error.stage == "L0"
    assert "nests deeper than 32 levels" in error.message
    assert error.path == "/child" * 32


def test_json_text_nested_200_deep_is_refused():
    text = '{"a":' * 200 + "1" + "}" * 200
    assert "nests deeper than 32 levels" in _only_error(run_ladder(text, contract())).message


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_json_text_nested_a_million_deep_is_refused_without_recursion_error():
    text = "[" * 1_000_000 + "]" * 1_000_000
    error = _only_error(run_ladder(text, contract()))
    assert "nests too deep to parse" in error.message


def test_a_python_payload_nested_100000_deep_is_refused_iteratively():
    value: list = []
    for _ in range(100_000):
        value = [value]
    assert "nests deeper" in _only_error(run_ladder(value, contract())).message


def test_text_over_the_size_limit_is_refused_before_parsing():
    small = LadderContract(
        json_schema=contract().json_schema, limits=LadderLimits(max_text_bytes=1000)
    )
    error = _only_error(run_ladder(b" " * 5000, small))
    assert "5000 bytes; the limit is 1000" in error.message


def test_too_many_values_are_refused():
    small = LadderContract(json_schema={"type": "array"}, limits=LadderLimits(max_nodes=100))
    assert "more than 100 values" in _only_error(run_ladder(list(range(500)), small)).message


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"hours": NaN}', "NaN is not a JSON number"),
        ('{"hours": Infinity}', "Infinity is not a JSON number"),
        ('{"a": 1, "a": 2}', "duplicate object key 'a'"),
        ("", "malformed JSON at line 1 column 1"),
    ],
)
def test_json_that_python_would_accept_but_is_not_json(text, expected):
    assert expected in _only_error(run_ladder(text, contract())).message


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ({"hours": float("nan")}, "nan is not a JSON number"),
        ({"when": object()}, "a object is not a JSON value"),
        ({1: "x"}, "object key 1 is not a string"),
        ({"tags": ("a", "b")}, "a tuple is not a JSON value"),
    ],
)
def test_python_values_that_are_not_json(value, expected):
    error = _only_error(run_ladder(value, contract()))
    assert error.stage == "L0" and expected in error.message


def test_the_callers_payload_is_never_changed():
    original = entry(status="APPROVED", extra="x")
    snapshot = dict(original)
    from compiler.ladder import EnumCaseTransform

    result = run_ladder(original, contract(transforms=[EnumCaseTransform(path="/status")]))
    assert result.payload["status"] == "approved" and "extra" not in result.payload
    assert original == snapshot


def test_an_unresolvable_ref_is_a_contract_error():
    with pytest.raises(
        ValidationError,
        match=r"\$ref '#/\$defs/missing' at /properties/a does "
        "not resolve",
    ):
        LadderContract(
            json_schema={"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}}
        )


def test_a_remote_ref_is_refused_not_fetched():
    with pytest.raises(ValidationError, match="is not local"):
        LadderContract(
            json_schema={
                "type": "object",
                "properties": {"a": {"$ref": "https://example.com/schema.json"}},
            }
        )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "allOf": [{"$ref": "#"}]},
        {"$ref": "#/$defs/a", "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}},
        {
            "type": "object",
            "$defs": {"x": {"anyOf": [{"not": {"$ref": "#/$defs/x"}}]}},
            "properties": {"p": {"$ref": "#/$defs/x"}},
        },
    ],
    ids=["allOf-root", "ref-ring", "anyOf-not-self"],
)
def test_circular_schemas_that_never_descend_are_contract_errors(schema):
    with pytest.raises(ValidationError, match="circular schema: .* refer to each other"):
        LadderContract(json_schema=schema, top_level="object")


def test_a_recursive_schema_that_descends_into_the_payload_works():
    tree = {
        "$defs": {
            "node": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "children": {"type": "array", "items": {"$ref": "#/$defs/node"}},
                },
                "required": ["name"],
                "additionalProperties": False,
            }
        },
        "$ref": "#/$defs/node",
    }
    c = LadderContract(json_schema=tree, top_level="object")
    payload = {"name": "root", "children": [{"name": "a", "children": [{"name": "b", "x": 1}]}]}
    result = run_ladder(payload, c)
    assert result.ok, result.findings
    assert [(x.path, x.op) for x in result.corrections] == [("/children/0/children/0/x", "remove")]
    bad = run_ladder({"name": "root", "children": [{"children": []}]}, c)
    assert [(f.stage, f.path) for f in bad.findings if f.severity == "error"] == [
        ("L4", "/children/0")
    ]


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_a_schema_with_10000_properties_is_a_clear_contract_error_and_fast():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}}
    with pytest.raises(ValidationError, match="declares 10000 properties; the limit is 2000"):
        LadderContract(json_schema=schema)


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_raising_the_property_limit_makes_a_10000_property_schema_usable_in_bounded_time():
    schema = {"type": "object", "properties": {f"p{i}": {"type": "string"} for i in range(10_000)}}
    c = LadderContract(json_schema=schema, limits=LadderLimits(max_schema_properties=10_000))
    payload = {f"p{i}": "x" for i in range(0, 10_000, 2)} | {"q1": "y", "q2": "z"}
    result = run_ladder(payload, c)
    assert result.ok, result.findings
    # 2 undeclared x 5,000 missing fields is within the comparison limit: scored, not renamed
    assert [f.path for f in result.findings if f.stage == "L1"] == ["/q1", "/q2"]


def test_a_schema_nested_too_deep_is_refused_before_the_metaschema_check():
    schema: dict = {"type": "string"}
    for _ in range(500):
        schema = {"type": "object", "properties": {"a": schema}}
    with pytest.raises(ValidationError, match="schema nests deeper than 32 levels"):
        LadderContract(json_schema=schema)


def test_a_schema_with_too_many_subschemas_is_refused():
    schema = {"type": "array", "prefixItems": [{"type": "string"} for _ in range(50)]}
    with pytest.raises(ValidationError, match="more than 20 subschemas"):
        LadderContract(json_schema=schema, limits=LadderLimits(max_schema_nodes=20))


def test_an_invalid_schema_names_where():
    with pytest.raises(ValidationError, match="not a valid JSON Schema at /properties/a/type"):
        LadderContract(json_schema={"type": "object", "properties": {"a": {"type": "strng"}}})


def test_a_pattern_that_does_not_compile_is_a_contract_error():
    with pytest.raises(ValidationError, match="'\\(\\?<x' is not a 'regex'"):
        LadderContract(json_schema={"type": "object", "patternProperties": {"(?<x": {}}})


@pytest.mark.timeout(SLOW_INPUT_TIMEOUT_S)
def test_adversarial_strings_do_not_make_the_guard_backtrack():
    long = "a" * 200_000 + "@" + "b" * 200_000
    digits = "1 " * 100_000
    result = run_ladder({"description": long, "entry_id": digits}, contract())
    assert not any(f.stage == "L3" for f in result.findings)


def test_a_schema_object_that_contains_itself_is_refused_not_a_recursion_error():
    schema: dict = {"type": "object", "properties": {}}
    schema["properties"]["self"] = schema
    with pytest.raises(ValidationError, match="contains itself"):
        LadderContract(json_schema=schema)
