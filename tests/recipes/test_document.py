"""recipe/1.0 documents: render and parse round-trip; steps split only on real `### N.` headings."""

from __future__ import annotations

import re

import pytest

from compiler.recipes import RecipeFormatError, parse_recipe, render_document
from tests.recipes.conftest import recipe, spec

FRONT = "---\nslug: demo\ntitle: Demo\nsummary: A demo\ntags: [demo]\n---\n"


def test_render_then_parse_gives_the_recipe_back() -> None:
    s = spec(
        "round-trip",
        tags=["alpha", "two words"],
        triggers=["gamma"],
        not_when=["delta"],
        composes=["other"],
        loads_in=["main", "subagent"],
        category="data",
        parallelism_groups=[[0, 1]],
        lineage={"skill": "x"},
        steps=[
            {"title": "Loop", "body": "loop: count 30\nRepeat.", "done_when": "all done"},
            {"title": "Plain", "body": "Text with a fence:\n```\nuses: other\n```"},
        ],
    )
    parsed = parse_recipe(render_document(s), source="<test:round-trip>")
    assert parsed == recipe("round-trip", **{k: v for k, v in s.items() if k != "slug"})
    assert parsed.tags == ["alpha", "two words", "gamma"]
    loop = parsed.steps[0].directives.loop
    assert loop is not None and (loop.max, loop.clamped_from) == (25, 30)
    assert parsed.steps[0].directives.done_when == "all done"
    assert parsed.steps[1].directives.uses is None
    assert parsed.groups == [[0, 1]]


def test_steps_are_numbered_from_one() -> None:
    r = parse_recipe(FRONT + "### 1. First\nOne.\n\n### 2. Second\nTwo.\n")
    assert [(s.index, s.title, s.prose) for s in r.steps] == [
        (0, "First", "One."),
        (1, "Second", "Two."),
    ]
    assert r.groups == [[0], [1]]  # sequential when no parallelism is declared


@pytest.mark.parametrize(
    "body",
    [
        "### 1. First\n```\n### 2. Example\n```\n",  # right number, inside a fence
        "### 1. First\n~~~\n### 2. Example\n~~~\n### 3. Real\nx\n",
        "### 1. First\n````md\n```\n### 2. Nested\n```\n````\n",
    ],
)
def test_a_step_heading_inside_a_fence_is_refused(body: str) -> None:
    with pytest.raises(RecipeFormatError, match="PHANTOM"):
        parse_recipe(FRONT + body)


def test_a_closed_fence_does_not_hide_the_next_step() -> None:
    r = parse_recipe(FRONT + "### 1. First\n```\ncode\n```\n### 2. Second\nTwo.\n")
    assert [s.title for s in r.steps] == ["First", "Second"]


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("no frontmatter", "no frontmatter"),
        (FRONT.replace("tags: [demo]", "steps: []") + "### 1. A\nx\n", "steps belong in the body"),
        (FRONT + "### 2. A\nx\n", "numbered [2]"),
        (FRONT + "### 1. A\nx\n### 1. B\ny\n", "numbered [1, 1]"),
        ("---\n- a list\n---\n### 1. A\nx\n", "frontmatter must be a mapping"),
    ],
)
def test_malformed_documents(text: str, reason: str) -> None:
    with pytest.raises(RecipeFormatError, match=re.escape(reason)):
        parse_recipe(text)
