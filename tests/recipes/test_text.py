"""Tokens and the graduated fuzzy match (seed 004 §3.2)."""

import pytest

from compiler.recipes.text import contains_phrase, fuzzy, stem, tokens, words


def test_tokens_lower_case_drop_stop_words_and_short_tokens() -> None:
    assert tokens("Please FIX the Login bug in a UI, x y") == ["fix", "login", "bug", "ui"]


def test_tokens_are_deduplicated_in_first_seen_order() -> None:
    assert tokens("deploy api, then deploy API twice") == ["deploy", "api", "twice"]


def test_tokens_fold_apostrophes_and_drop_contracted_stop_words() -> None:
    assert tokens("I'm sure it's the user's cache; don't guess") == ["users", "cache", "guess"]


def test_words_keep_stop_words_for_phrase_matching() -> None:
    assert words("Not working, since Monday") == ["not", "working", "since", "monday"]


def test_stem_reduces_inflections_to_one_root() -> None:
    assert {stem(w) for w in ("debug", "debugging", "debugged", "debugs")} == {"debug"}


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("debug", "debug"),  # equality
        ("ui", "ui"),  # tiny tokens still match themselves
        ("debugging", "debugged"),  # shared stem
        ("run", "runs"),  # shared stem at length 3
        ("config", "configuration"),  # prefix, both >= 4
        ("auth", "authentication"),
        ("reconcilation", "reconciliation"),  # typo: stems one edit apart, both >= 5
        ("api", "apis"),  # shared stem, both >= 3
        ("exeption", "exception"),  # one deletion
        ("crashs", "crash"),
        ("deploy", "deplo"),
    ],
)
def test_fuzzy_matches(a: str, b: str) -> None:
    assert fuzzy(a, b)
    assert fuzzy(b, a), "fuzzy is symmetric"


@pytest.mark.parametrize(
    ("a", "b", "why"),
    [
        ("ui", "uix", "a 2-letter token matches only by equality"),
        ("ci", "cd", "no edit distance below length 5"),
        ("exceptoin", "exception", "a transposition is two Levenshtein edits"),
        ("ci", "cis", "a 2-letter token matches only by equality"),
        ("cat", "cart", "no edit distance below length 5"),
        ("bug", "bugle", "prefix needs both >= 4"),
        ("test", "text", "edit distance needs both >= 5"),
        ("audit", "admit", "two edits apart"),
        ("report", "repair", "different words of length >= 5"),
    ],
)
def test_fuzzy_is_graduated_by_length(a: str, b: str, why: str) -> None:
    assert not fuzzy(a, b), why
    assert not fuzzy(b, a), why


def test_contains_phrase_needs_consecutive_fuzzy_words() -> None:
    prompt = words("the checkout stopped workin after the deploy")
    assert contains_phrase(prompt, ["stopped", "working"])
    assert contains_phrase(prompt, ["stop", "working"])
    assert not contains_phrase(prompt, ["checkout", "working"])  # not adjacent
    assert not contains_phrase(prompt, [])
    assert not contains_phrase(["stopped"], ["stopped", "working"])
