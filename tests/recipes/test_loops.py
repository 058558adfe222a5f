"""Bounded loops (seed 004 §6.2-6.3): parse_loop clamps, malformed loops, the dry test."""

from __future__ import annotations

import pytest

from compiler.recipes import HARD_CAP, DirectiveError, is_dry, parse_loop
from compiler.recipes.directives import DEFAULT_MAX, loop_should_stop
from schemas.recipes import LoopSpec


@pytest.mark.parametrize(
    ("directive", "mode", "max_", "marker", "clamped_from"),
    [
        ("count 3", "count", 3, None, None),
        ("loop: count 3", "count", 3, None, None),
        ("COUNT 2  # twice", "count", 2, None, None),
        ("count 0", "count", 1, None, 0),
        ("count -4", "count", 1, None, -4),
        ("count 25", "count", 25, None, None),
        ("count 26", "count", 25, None, 26),
        ("count 1000", "count", 25, None, 1000),
        ("until-dry", "until-dry", DEFAULT_MAX, None, None),
        ("until-dry max 3", "until-dry", 3, None, None),
        ("until-dry max 99", "until-dry", 25, None, 99),
        ("until-dry max 0", "until-dry", 1, None, 0),
        ("until APPROVED", "until-marker", DEFAULT_MAX, "APPROVED", None),
        ("until APPROVED max 8", "until-marker", 8, "APPROVED", None),
        ("loop: until LGTM max 500", "until-marker", 25, "LGTM", 500),
    ],
)
def test_parse_loop(
    directive: str, mode: str, max_: int, marker: str | None, clamped_from: int | None
) -> None:
    loop = parse_loop(directive)
    assert (loop.mode, loop.max, loop.marker, loop.clamped_from) == (
        mode,
        max_,
        marker,
        clamped_from,
    )
    assert 1 <= loop.max <= HARD_CAP


def test_default_max_and_hard_cap() -> None:
    assert (DEFAULT_MAX, HARD_CAP) == (5, 25)


@pytest.mark.parametrize(
    ("directive", "reason"),
    [
        ("", "empty loop directive"),
        ("loop:", "empty loop directive"),
        ("count", "count needs one whole number"),
        ("count three", "count needs one whole number"),
        ("count 2.5", "count needs one whole number"),
        ("count 3 4", "count needs one whole number"),
        ("until", "until needs a MARKER"),
        ("until max 3", "until needs a MARKER"),
        ("until-dry 3", "expected `max M`"),
        ("until-dry max", "expected `max M`"),
        ("until-dry max many", "expected `max M`"),
        ("until DONE max 3 extra", "expected `max M`"),
        ("forever", "unknown mode 'forever'"),
        ("while true", "unknown mode 'while'"),
    ],
)
def test_malformed_loops_raise(directive: str, reason: str) -> None:
    with pytest.raises(DirectiveError, match=f".*{reason}"):
        parse_loop(directive)


def test_directive_error_is_a_value_error() -> None:
    assert issubclass(DirectiveError, ValueError)


@pytest.mark.parametrize(
    "note",
    [
        None,
        "",
        "   \n",
        "No new findings this pass.",
        "nothing left to check",
        "Nothing new.",
        "Review complete.",
        "all covered",
        "sources exhausted",
        "finished; no changes",
    ],
)
def test_dry_notes(note: str | None) -> None:
    assert is_dry(note)


@pytest.mark.parametrize(
    "note",
    [
        "found 3 new issues",
        "incomplete: two sections remain",
        "not complete yet",
        "the review is not complete",
        "almost finished, one table to go",
        "not yet complete",
        "not quite finished: the appendix is open",
        "fixed the parser; 2 tests still fail",
    ],
)
def test_not_dry_notes(note: str) -> None:
    assert not is_dry(note)


def test_loop_should_stop() -> None:
    count = LoopSpec(mode="count", max=3)
    assert [loop_should_stop(count, i, True, "no new") for i in (1, 2, 3)] == [False, False, True]
    assert loop_should_stop(count, 1, False, "")  # a failed iteration stops any loop
    dry = LoopSpec(mode="until-dry", max=5)
    assert not loop_should_stop(dry, 1, True, "found 2 new issues")
    assert loop_should_stop(dry, 2, True, "no new issues")
    assert loop_should_stop(dry, 5, True, "found 1 new issue")  # capped
    marker = LoopSpec(mode="until-marker", max=4, marker="APPROVED")
    assert not loop_should_stop(marker, 1, True, "changes requested")
    assert loop_should_stop(marker, 2, True, "reviewer: APPROVED")
    assert not loop_should_stop(marker, 2, True, "approved")  # the marker is case-sensitive
