"""validate_spec, the one gate (seed 004 §5.2): unsafe slugs, phantom headings, parallel groups."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.recipes import validate_spec
from tests.recipes.conftest import spec, steps


def problems_of(**fields: Any) -> list[str]:
    return validate_spec(spec(**fields))


def test_a_sound_spec_has_no_problems() -> None:
    assert validate_spec(spec()) == []
    assert validate_spec(spec("a")) == []
    assert validate_spec(spec("code-review-2")) == []


@pytest.mark.parametrize(
    "slug",
    ["../x", "a/b", "..", ".", "../../etc", "a\\b", "Upper", "a.b", "-a", "a-", "", " a",
     "abc\n", "a\x00", "a" * 65, None, 42, "ünïcode"],
)  # fmt: skip
def test_unsafe_slugs_are_refused(slug: object) -> None:
    problems = validate_spec(spec(slug="x") | {"slug": slug})
    assert len(problems) == 1
    assert f"slug {slug!r} is unsafe" in problems[0]
    assert "directory name" in problems[0]


@pytest.mark.parametrize("field", ["title", "summary"])
@pytest.mark.parametrize("value", [None, "", "   ", 7])
def test_title_and_summary_are_required(field: str, value: object) -> None:
    assert problems_of(**{field: value}) == [f"{field} is required (a non-empty line of text)"]


def test_title_is_one_line() -> None:
    assert problems_of(title="Two\nlines") == ["title must be a single line"]


@pytest.mark.parametrize("tags", [[], None])
def test_tags_are_required(tags: object) -> None:
    s = spec()
    if tags is None:
        del s["tags"]
    else:
        s["tags"] = tags
    assert validate_spec(s) == ["tags is required (else the matcher can never surface it)"]


@pytest.mark.parametrize("tags", ["bug", [""], ["ok", 3]])
def test_tags_are_a_list_of_strings(tags: object) -> None:
    assert problems_of(tags=tags) == [f"tags must be a list of non-empty strings, not {tags!r}"]


def test_unknown_category_is_refused_known_ones_pass() -> None:
    (problem,) = problems_of(category="astrology")
    assert problem.startswith("category 'astrology' is not one of engineering, data")
    assert problems_of(category="verification") == []
    s = spec()
    del s["category"]
    assert validate_spec(s) == []  # category is optional


@pytest.mark.parametrize("value", [[], None, "do it"])
def test_at_least_one_step(value: object) -> None:
    assert "at least one step is required" in " ".join(problems_of(steps=value))


def test_incomplete_steps() -> None:
    problems = problems_of(
        steps=[{"title": "", "body": "x"}, {"title": "Only title"}, {"title": "Empty", "body": ""}]
    )
    assert problems == [
        "step 1 is incomplete: it needs a title and a body",
        "step 2 is incomplete: it needs a title and a body",
        "step 3 (Empty) is incomplete: its body is empty",
    ]
    assert problems_of(steps=["just text"]) == ["step 1 must be a mapping with title and body"]


@pytest.mark.parametrize(
    "body",
    [
        "Do this.\n### 2. Sneaky second step\nand more",
        "Do this.\n```\n### 2. x\n```",  # inside a fence: the runner's split still sees it
        "Do this.\n  ### 3) Indented, parenthesised",
        "### 1. At the very start",
        "Do this.\n## 4. Level-two",
    ],
)
def test_phantom_heading_in_a_body_is_refused(body: str) -> None:
    (problem,) = problems_of(steps=[{"title": "Main", "body": body}])
    assert problem.startswith("step 1 (Main): its body holds a numbered heading")
    assert "PHANTOM" in problem


@pytest.mark.parametrize(
    "body", ["### Notes\nplain heading", "1. a list item\n2. another", "Step 2. is fine in prose"]
)
def test_unnumbered_headings_and_lists_are_fine(body: str) -> None:
    assert problems_of(steps=[{"title": "Main", "body": body}]) == []


def test_a_numbered_title_is_refused() -> None:
    problems = problems_of(steps=[{"title": "### 2. x", "body": "b"}])
    assert problems == ["step 1: the title must be one line of text, not '### 2. x'"]


NOT_LISTS = "parallelism groups must be a list of non-empty lists of step indices"


@pytest.mark.parametrize(
    ("groups", "expected"),
    [
        ([[0], [1, 2]], []),
        ([[0, 1, 2]], []),
        ([[2], [0], [1]], []),
        (
            [[0, 1], [1, 2]],
            [
                "step index 1 appears in parallelism groups 0 and 1: each step belongs to exactly "
                "one group"
            ],
        ),
        ([[0], [1]], ["parallelism groups leave out step indices [2]: cover every step"]),
        (
            [[0], [1], [2, 3]],
            ["parallelism group 2 names step index 3: indices are 0-based, 0..2"],
        ),
        (
            [[0], [1], [-1, 2]],
            ["parallelism group 2 names step index -1: indices are 0-based, 0..2"],
        ),
        (
            [[0, True], [2]],
            [
                "parallelism group 0 names step index True: indices are 0-based, 0..2",
                "parallelism groups leave out step indices [1]",
            ],
        ),
        ([[0], [], [1, 2]], [NOT_LISTS]),
        ("all", [NOT_LISTS]),
    ],
)  # fmt: skip
def test_parallelism_groups_cover_every_step_exactly_once(
    groups: object, expected: list[str]
) -> None:
    three = steps("A", "B", "C")
    assert problems_of(steps=three, parallelism_groups=groups) == expected
    # the frontmatter spelling is checked the same way
    assert validate_spec(spec(steps=three, parallelism={"groups": groups})) == expected


def test_frontmatter_spellings_are_accepted() -> None:
    s = spec() | {
        "not-when": ["greenfield"],
        "loads-in": ["main", "subagent"],
        "authoredBy": "authored",
    }
    assert validate_spec(s) == []


@pytest.mark.parametrize(
    ("fields", "fragment"),
    [
        ({"shell": "rm -rf /"}, "unknown field 'shell'"),
        ({"schema": "recipe/2.0"}, "schema 'recipe/2.0' is not recipe/1.0"),
        ({"composes": ["../x"]}, "composes names '../x', which is not a recipe slug"),
        ({"composes": ["sample"]}, "composes names the recipe itself"),
        ({"loads_in": ["everywhere"]}, "loads-in ['everywhere'] must be a non-empty list"),
        ({"authored_by": "root"}, "authoredBy 'root' is not one of"),
        ({"owner": "../acme"}, "owner '../acme' must be a slug"),
        ({"lineage": "x"}, "lineage must be a mapping"),
        ({"parallelism": [[0, 1]]}, "parallelism must be a mapping"),
        ({"not_when": "greenfield"}, "not-when must be a list of non-empty strings"),
    ],
)
def test_other_fields_are_checked(fields: dict[str, Any], fragment: str) -> None:
    problems = problems_of(**fields)
    assert any(fragment in p for p in problems), problems


def test_malformed_directives_are_problems() -> None:
    (problem,) = problems_of(steps=[{"title": "Loop", "body": "loop: forever\ngo"}])
    assert problem.startswith("step 1 (Loop): `loop: forever`: unknown mode")


def test_every_problem_is_reported_at_once() -> None:
    problems = validate_spec(
        {"slug": "../x", "tags": [], "category": "bogus", "steps": [], "parallelism_groups": [[0]]}
    )
    assert len(problems) >= 6


def test_not_a_mapping() -> None:
    assert validate_spec(["slug"]) == ["a recipe spec is a mapping of fields, not list"]  # type: ignore[arg-type]
