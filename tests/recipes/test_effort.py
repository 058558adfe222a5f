"""classify_effort (seed 004 §7.2) and what each tier sets (§7.3)."""

from __future__ import annotations

import pytest

from compiler.recipes import classify_effort, effort_policy, effort_signals


@pytest.mark.parametrize(
    "prompt",
    [
        "thanks!",
        "ok",
        "Thank you, that works",
        "hi there",
        "cool",
        "got it",
        "",
        "   ",
        "yes please",
    ],
)
def test_trivial(prompt: str) -> None:
    assert classify_effort(prompt) == "trivial"


@pytest.mark.parametrize(
    "prompt",
    [
        "rename the variable foo to bar",
        "add a CSV export button to the dashboard",
        "fix the typo in README.md",
        "summarise this quarter's sales numbers for the board",
        "debug this",  # short, but hard work is never trivial
        "thanks, now debug it",
        "Can you design a schema for orders?",
    ],
)
def test_standard(prompt: str) -> None:
    assert classify_effort(prompt) == "standard"


@pytest.mark.parametrize(
    "prompt",
    [
        "investigate why the nightly job fails, refactor the retry logic and migrate the config",
        "Profile src/ingest/loader.py and optimise the `parse_rows()` hot loop",
        "audit the auth flow, then harden the session handling; also review the token refresh "
        "and the logout path, and diagnose why sessions leak",
    ],
)
def test_deep(prompt: str) -> None:
    assert classify_effort(prompt) == "deep"


@pytest.mark.parametrize(
    "prompt",
    [
        "Do a comprehensive, exhaustive audit of the entire codebase",
        "deep dive end-to-end into why checkout is slow",
        "architect, design and implement a new billing service; migrate the data, audit the "
        "permissions, benchmark it, then review and verify every module thoroughly",
    ],
)
def test_ultra(prompt: str) -> None:
    assert classify_effort(prompt) == "ultra"


def test_signals_explain_the_tier() -> None:
    s = effort_signals("Refactor src/app.py and debug the `run()` loop; be thorough")
    assert s.has_paths and s.has_code
    assert s.deep_verbs == ["debug", "refactor"]
    assert s.ultra_cues == ["thorough"]
    assert s.score == 1 + 1 + 2 + 2
    assert s.tier == "deep"


def test_three_hard_verbs_lift_a_standard_prompt_to_deep() -> None:
    s = effort_signals("design, implement and review it")
    assert s.score == 3 and len(s.deep_verbs) == 3
    assert s.tier == "deep"


def test_trivial_tokens_are_matched_on_word_boundaries() -> None:
    # "hi" inside "this", "ok" inside "token", "no" inside "notes": not acknowledgements
    assert classify_effort("this token notes") == "trivial"  # <= 4 words and no signal
    assert not effort_signals("this token notes").trivial_hit


def test_policies_scale_with_the_tier() -> None:
    tiers = ["trivial", "standard", "deep", "ultra"]
    policies = [effort_policy(t) for t in tiers]  # type: ignore[arg-type]
    assert [p.plan for p in policies] == [False, True, True, True]
    budgets = [p.thinking_budget_tokens for p in policies]
    assert budgets == sorted(budgets) and budgets[0] == 0
    widths = [p.max_parallel_steps for p in policies]
    assert widths == sorted(widths)
    assert policies[3].orchestration == "full-workflow"
    assert policies[3].verify_recipe == "doubt-driven-verify"


def test_the_ultra_verify_recipe_is_curated() -> None:
    from compiler.recipes import load_library
    from tests.recipes.conftest import STDLIB_RECIPES

    verify = effort_policy("ultra").verify_recipe
    assert verify is not None and verify in load_library(STDLIB_RECIPES)


@pytest.mark.parametrize(
    "prompt",
    [
        "hey, the checkout page crashes on submit",
        "no new tests fail in ci",
        "ok so the export is empty",
    ],
)
def test_a_request_that_opens_with_small_talk_is_not_trivial(prompt: str) -> None:
    assert classify_effort(prompt) != "trivial"
