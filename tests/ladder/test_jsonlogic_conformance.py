"""The JsonLogic library behind L5 passes every case of the official conformance file."""

import json
from pathlib import Path

import pytest

from compiler.ladder.rules import evaluate, rule_problem

TESTS = Path(__file__).resolve().parents[1] / "data" / "jsonlogic" / "tests.json"


def _cases() -> list[tuple[str, object, object, object]]:
    section = "start"
    cases = []
    for entry in json.loads(TESTS.read_text(encoding="utf-8")):
        if isinstance(entry, str):
            section = entry.lstrip("# ").strip()
            continue
        rule, data, expected = entry
        cases.append((section, rule, data, expected))
    return cases


CASES = _cases()


def _same(a: object, b: object) -> bool:
    """JSON equality: 1 == 1.0, but True is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def test_the_conformance_file_is_the_official_one():
    assert len(CASES) == 278


@pytest.mark.parametrize(
    ("section", "rule", "data", "expected"),
    CASES,
    ids=[f"{i:03d}-{c[0][:30]}" for i, c in enumerate(CASES)],
)
def test_conformance_case(section, rule, data, expected):
    assert rule_problem(rule, 32) is None
    result, problem = evaluate(rule, data)
    assert problem is None
    assert _same(result, expected), f"{section}: {rule} on {data} gave {result!r}"
