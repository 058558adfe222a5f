"""Fixture tests per pass: titled input/expected pairs under fixtures/<pass>/, one runner.

Each fixture is a JSON file: {"title", "profile"?, "input": <forge.plan/1 candidate>, and
either "expected" (a subset of the named pass's output; "steps" keyed by step_key, "order"
the exact step order) or "expected_error" (the diagnostic codes, in order)}. The runner runs
passes up to the fixture's pass, re-validates every pass output and checks that its canonical
hash is stable across a second compilation.
"""

import json
from pathlib import Path
from typing import Any

import pytest

from compiler.errors import CompilerError
from compiler.hashing import sha256_of
from compiler.plan.parse import parse_candidate
from compiler.plan.pipeline import PASSES, run_passes
from tests.compiler.conftest import make_ctx

FIXTURES = Path(__file__).parent / "fixtures"
LETTER = {fn.__name__: letter for letter, fn in PASSES}
CASES = sorted(FIXTURES.glob("*/*.json"))


def _subset(expected: Any, actual: Any, where: str) -> None:
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{where}: expected an object, got {actual!r}"
        for key, value in expected.items():
            assert key in actual, f"{where}: missing {key!r}"
            _subset(value, actual[key], f"{where}.{key}")
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), (
            f"{where}: expected {len(expected)} items, got {actual!r}"
        )
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            _subset(e, a, f"{where}[{i}]")
    else:
        assert expected == actual, f"{where}: expected {expected!r}, got {actual!r}"


def _check(expected: dict[str, Any], output: dict[str, Any]) -> None:
    expected = dict(expected)
    steps = {s["step_key"]: s for s in output.get("steps", [])}
    if "order" in expected:
        assert list(steps) == expected.pop("order")
    for key, want in expected.pop("steps", {}).items():
        assert key in steps, f"no step {key!r}; steps: {list(steps)}"
        _subset(want, steps[key], key)
    _subset(expected, output, "plan")


@pytest.mark.parametrize("path", CASES, ids=[f"{p.parent.name}/{p.stem}" for p in CASES])
def test_fixture(path: Path) -> None:
    case = json.loads(path.read_text(encoding="utf-8"))
    assert case.get("title"), f"{path} needs a title"
    letter = LETTER[path.parent.name]
    ctx = make_ctx(case.get("profile"))
    if "expected_error" in case:
        with pytest.raises(CompilerError) as err:
            run_passes(parse_candidate(case["input"]), ctx=ctx)
        assert [d.code for d in err.value.diagnostics] == case["expected_error"]
        return
    stages = run_passes(parse_candidate(case["input"]), ctx=ctx)
    again = run_passes(parse_candidate(case["input"]), ctx=ctx)
    for key, model in stages.items():
        assert type(model).model_validate(model.model_dump()) == model, f"pass {key} re-validation"
        assert sha256_of(model) == sha256_of(again[key]), f"pass {key} hash is not stable"
    _check(case["expected"], stages[letter].model_dump(mode="json"))


def test_every_pass_has_fixtures() -> None:
    have = {p.parent.name for p in CASES}
    assert have == set(LETTER), f"passes without fixtures: {set(LETTER) - have}"
