"""The match keys and the inverted index answer exactly what text.fuzzy and the full scan answer."""

from __future__ import annotations

import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.recipes import RecipeLibrary
from compiler.recipes.index import InvertedIndex, PromptKeys, RecipeKeys, WordKeys
from compiler.recipes.match import MAX_CONSIDERED
from compiler.recipes.text import fuzzy, tokens
from schemas.recipes import Recipe, RecipeStep
from tests.recipes.conftest import recipe

SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_ROOTS = st.text(alphabet="abcdeiklmnoprstu", min_size=1, max_size=8)
_SUFFIXES = st.sampled_from(["", "", "s", "ed", "ing", "er", "ion", "ation", "ly", "es"])
_STOP = st.sampled_from(["the", "should", "doing", "other", "not", "in", "a", "being", "make"])
ROOTED = st.builds(lambda r, s: r + s, _ROOTS, _SUFFIXES)
WORD = st.one_of(ROOTED, _STOP, st.sampled_from(["ui", "api", "config", "debug", "x"]))


@st.composite
def near(draw: st.DrawFn, word: str) -> str:
    """A word close to `word`: a prefix, an extension, an inflection or a one-letter edit."""
    kind = draw(st.sampled_from(["prefix", "extend", "inflect", "edit", "swap"]))
    letter = draw(st.sampled_from("aeiorstnlx"))
    at = draw(st.integers(0, len(word)))
    if kind == "prefix":
        return word[: max(1, at)]
    if kind == "extend":
        return word + draw(ROOTED)
    if kind == "inflect":
        return word + draw(_SUFFIXES)
    if kind == "edit":
        return word[:at] + letter + word[at + 1 :] if word[at:] else word + letter
    return word[: at - 1] + word[at : at + 1] + word[at - 1 : at] + word[at + 1 :] if at else word


@st.composite
def prompt_and_word(draw: st.DrawFn) -> tuple[str, str]:
    ws = draw(st.lists(WORD, min_size=0, max_size=6))
    if ws and draw(st.booleans()):
        w = draw(near(draw(st.sampled_from(ws))))
    else:
        w = draw(WORD)
    return " ".join(ws), w


@SETTINGS
@given(prompt_and_word())
def test_prompt_keys_agree_with_fuzzy(case: tuple[str, str]) -> None:
    prompt, w = case
    expected = any(fuzzy(t, w) for t in tokens(prompt))
    assert PromptKeys.of(prompt).matches(WordKeys.of(w)) == expected


def test_prompt_keys_examples() -> None:
    keys = PromptKeys.of("please reconcilation of the configuration for ui")
    assert keys.matches(WordKeys.of("reconciliation"))  # one edit on the stem
    assert keys.matches(WordKeys.of("config"))  # prefix
    assert keys.matches(WordKeys.of("ui"))
    assert not keys.matches(WordKeys.of("uix"))
    assert not keys.matches(WordKeys.of("please"))  # stop-words are not tokens
    assert keys.equals(WordKeys.of("configuration"))
    assert not keys.equals(WordKeys.of("config"))


def _phrase_or_word(draw: st.DrawFn) -> str:
    return " ".join(draw(st.lists(WORD, min_size=1, max_size=3)))


@st.composite
def libraries(draw: st.DrawFn, max_size: int = 6) -> RecipeLibrary:
    recipes = []
    for i in range(draw(st.integers(1, max_size))):
        recipes.append(
            Recipe(
                slug=f"r{i}",
                owner=draw(st.sampled_from(["forge", "acme"])),
                title=" ".join(draw(st.lists(WORD, max_size=4))),
                summary=" ".join(draw(st.lists(WORD, max_size=6))),
                tags=draw(st.lists(st.builds(lambda: _phrase_or_word(draw)), max_size=5)),
                not_when=draw(st.lists(st.builds(lambda: _phrase_or_word(draw)), max_size=3)),
                steps=[RecipeStep(index=0, title="Only", body="Do it.", prose="Do it.")],
            )
        )
    return RecipeLibrary(recipes)


@SETTINGS
@given(libraries(), st.lists(WORD, max_size=7))
def test_indexed_match_equals_full_scan(lib: RecipeLibrary, prompt_words: list[str]) -> None:
    prompt = " ".join(prompt_words)
    for threshold in (None, 1.0):
        indexed = lib.match(prompt, threshold=threshold)
        full = lib.match(prompt, threshold=threshold, indexed=False)
        assert indexed == full


DENSE_WORDS = "deploy deploying release releases config configuration debug ui the should report"
DENSE = st.sampled_from([*DENSE_WORDS.split(), "audit"])


@st.composite
def dense_libraries(draw: st.DrawFn) -> RecipeLibrary:
    """More recipes than MAX_CONSIDERED over a dozen words, so most prompts reach many."""

    def phrase() -> str:
        return " ".join(draw(st.lists(DENSE, min_size=1, max_size=2)))

    return RecipeLibrary(
        [
            Recipe(
                slug=f"r{i}",
                title=" ".join(draw(st.lists(DENSE, max_size=3))),
                summary=" ".join(draw(st.lists(DENSE, max_size=4))),
                tags=[phrase() for _ in range(draw(st.integers(1, 4)))],
                not_when=[phrase() for _ in range(draw(st.integers(0, 1)))],
                steps=[RecipeStep(index=0, title="Only", body="Do it.", prose="Do it.")],
            )
            for i in range(draw(st.integers(MAX_CONSIDERED + 1, 45)))
        ]
    )


FITNESS = st.dictionaries(
    st.builds("forge/r{}".format, st.integers(0, 45)),
    st.one_of(st.floats(0.5, 3), st.floats(0.5, 3), st.floats(-1, 0), st.none(), st.just(math.nan)),
    min_size=10,
    max_size=40,
)


@settings(SETTINGS, max_examples=150)
@given(dense_libraries(), st.lists(DENSE, min_size=1, max_size=5), FITNESS)
def test_indexed_top_recipes_equal_full_scan_in_large_libraries(
    lib: RecipeLibrary, prompt_words: list[str], records: dict[str, float | None]
) -> None:
    # more recipes than MAX_CONSIDERED, and fitness lifts that reorder the best of them
    prompt = " ".join(prompt_words)
    for fitness in (None, records.get):
        assert lib.match(prompt, fitness=fitness) == lib.match(
            prompt, fitness=fitness, indexed=False
        )


def test_a_phrase_matched_only_through_stop_words_is_still_a_candidate() -> None:
    # "should" is a stop-word, so not a prompt token, yet it prefix-matches the phrase's "shoulder"
    lib = RecipeLibrary([recipe("physio", tags=["the shoulder"])])
    full = lib.match("the should", indexed=False)
    assert [m.slug for m in full.matches] == ["physio"]
    assert lib.match("the should") == full


def test_a_recipe_only_argued_against_is_not_considered() -> None:
    lib = RecipeLibrary([recipe("plain", tags=["zebra"], not_when=["gamma"])])
    for indexed in (True, False):
        assert lib.match("gamma rays", indexed=indexed).considered == []


def test_candidates_come_from_stems_prefixes_and_deletions() -> None:
    keys = [
        RecipeKeys.of(recipe("stemmy", tags=["debugging"])),
        RecipeKeys.of(recipe("prefixy", tags=["configuration"])),
        RecipeKeys.of(recipe("typoed", tags=["reconciliation"])),
        RecipeKeys.of(recipe("unrelated", tags=["zebra"], title="Zebra", summary="zebra")),
    ]
    index = InvertedIndex(keys)
    assert index.candidates(PromptKeys.of("debugged it")) == {"stemmy"}
    assert index.candidates(PromptKeys.of("config please")) == {"prefixy"}
    assert index.candidates(PromptKeys.of("reconcilation")) == {"typoed"}
    assert index.candidates(PromptKeys.of("nothing relevant")) == set()
