"""Only the consecutive leading directive lines of a step body fire (seed 004 §4.2-4.3)."""

from __future__ import annotations

import pytest

from compiler.recipes import DirectiveError, load_library, parse_recipe
from compiler.recipes.directives import leading_directive_lines, parse_directives
from tests.recipes.conftest import STDLIB_RECIPES


def test_leading_lines_in_any_order() -> None:
    d, prose = parse_directives(
        "invoke skill: table.diff\nloop: until-dry max 3\nuses: doubt-driven-verify\n"
        "done-when: nothing new\nCompare the tables."
    )
    assert d.invoke_skill == "table.diff"
    assert d.loop is not None and (d.loop.mode, d.loop.max) == ("until-dry", 3)
    assert d.uses == "doubt-driven-verify"
    assert d.done_when == "nothing new"
    assert prose == "Compare the tables."


def test_invoke_skill_spellings_and_comments() -> None:
    d, _ = parse_directives("Invoke-Skill: table.diff\nLOOP: count 2  # twice\nbody")
    assert d.invoke_skill == "table.diff"
    assert d.loop is not None and d.loop.max == 2


@pytest.mark.parametrize(
    "body",
    [
        "Run the checks. Then uses: doubt-driven-verify on the result.",
        "Run the checks.\nuses: doubt-driven-verify",  # after prose
        "done-when: checked\n\nuses: doubt-driven-verify",  # after a blank line
        "```\nuses: doubt-driven-verify\nloop: count 9\n```",  # in a fence
        "Example:\n```yaml\nloop: count 25\ninvoke skill: x\n```",
        "> uses: doubt-driven-verify",  # quoted
        "- uses: doubt-driven-verify",  # a list item
    ],
)
def test_directives_in_prose_or_fences_never_fire(body: str) -> None:
    d, _ = parse_directives(body)
    assert (d.uses, d.loop, d.invoke_skill) == (None, None, None)


def test_leading_directive_lines_stop_at_the_first_other_line() -> None:
    found, prose = leading_directive_lines("loop: count 2\nuses: debug\nText\nloop: count 9")
    assert found == [("loop", "count 2"), ("uses", "debug")]
    assert prose == "Text\nloop: count 9"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ("loop: count 2\nloop: count 3\nx", "appears twice"),
        ("uses: ../etc\nx", "must name a recipe slug"),
        ("uses: Debug\nx", "must name a recipe slug"),
        ("invoke skill: ../../bin/sh\nx", "must name a skill id"),
        ("loop: sometimes\nx", "unknown mode"),
    ],
)
def test_malformed_leading_directives_raise(body: str, reason: str) -> None:
    with pytest.raises(DirectiveError, match=reason):
        parse_directives(body)


def test_a_fenced_example_in_a_recipe_is_text() -> None:
    text = (
        "---\nslug: demo\ntitle: Demo\nsummary: A demo\ntags: [demo]\n---\n"
        "### 1. Check\ndone-when: checked\nloop: count 2\nCheck it. An example of a call:\n"
        "```\nuses: debug\n```\n"
    )
    step = parse_recipe(text).steps[0]
    assert step.directives.done_when == "checked"
    assert step.directives.loop is not None and step.directives.loop.max == 2
    assert step.directives.uses is None
    assert "uses: debug" in step.prose


def test_stdlib_fenced_uses_does_not_fire() -> None:
    # debug's last step shows `uses: doubt-driven-verify` inside a fence, as an illustration
    debug = load_library(STDLIB_RECIPES).get("debug")
    if debug is None or "uses:" not in debug.steps[-1].prose:
        pytest.skip("the curated debug recipe no longer carries a fenced example")
    assert debug.steps[-1].directives.uses is None
