"""L4 converts mistyped scalars only when nothing is lost, and records each conversion."""

import pytest

from compiler.ladder import run_ladder
from compiler.ladder.conformance import _NO, lossless
from compiler.ladder.contract import LadderContract

SCHEMA = {
    "type": "object",
    "properties": {
        "amount": {"type": "number"},
        "count": {"type": "integer"},
        "paid": {"type": "boolean"},
        "code": {"type": "string"},
        "rows": {"type": "array", "items": {"type": "integer"}},
    },
}


@pytest.mark.parametrize(
    ("value", "types", "expected"),
    [
        ("100.00", {"number"}, 100.0),
        (" 7 ", {"integer"}, 7),
        ("7", {"number"}, 7),
        ("-0.5", {"number"}, -0.5),
        ("true", {"boolean"}, True),
        (42, {"string"}, "42"),
        (True, {"string"}, "true"),
        (3.0, {"integer"}, 3),
        ("7.5", {"integer"}, _NO),  # would lose the fraction
        ("1e5", {"number"}, _NO),  # ambiguous notation: left for validation
        ("007x", {"integer"}, _NO),
        ("yes", {"boolean"}, _NO),
        (True, {"integer"}, _NO),
        (1.5, {"string"}, _NO),  # float text is not canonical
        ("12", {"string", "integer"}, _NO),  # already valid
        (None, {"number"}, _NO),
        ("1" + "0" * 40, {"integer"}, _NO),
    ],
)
def test_lossless(value, types, expected):
    got = lossless(value, frozenset(types))
    assert got is _NO if expected is _NO else (got == expected and type(got) is type(expected))


def test_l4_converts_and_records_each_change():
    contract = LadderContract(json_schema=SCHEMA)
    payload = {"amount": "100.00", "count": "3", "paid": "false", "code": 7, "rows": ["1", 2]}
    result = run_ladder(payload, contract, stages=["L4"])
    assert result.ok, result.findings
    assert result.payload == {
        "amount": 100.0,
        "count": 3,
        "paid": False,
        "code": "7",
        "rows": [1, 2],
    }
    changes = {(c.path, c.before, c.after) for c in result.corrections if c.stage == "L4"}
    assert changes == {
        ("/amount", "100.00", 100.0),
        ("/count", "3", 3),
        ("/paid", "false", False),
        ("/code", 7, "7"),
        ("/rows/0", "1", 1),
    }


def test_lossy_values_stay_and_are_reported():
    result = run_ladder({"count": "3.5"}, LadderContract(json_schema=SCHEMA), stages=["L4"])
    assert not result.ok and result.payload == {"count": "3.5"}
    assert [f.path for f in result.findings if f.severity == "error"] == ["/count"]
