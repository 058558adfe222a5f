"""The weighted matcher (seed 004 §3.2-3.4, §8.1): weights, anti-triggers, tiers, fitness."""

from __future__ import annotations

import math

import pytest

from compiler.recipes import DEFAULT_THRESHOLD, RecipeLibrary, match
from compiler.recipes.match import MAX_CONSIDERED, classify_confidence
from schemas.recipes import ScoredRecipe
from tests.recipes.conftest import library, recipe

# Title and summary words that no prompt below mentions, so each test isolates one field.
QUIET = {"title": "Qqq", "summary": "Zzz"}


def score(prompt: str, lib: RecipeLibrary, slug: str) -> float | None:
    found = [s for s in match(prompt, lib).considered if s.slug == slug]
    return found[0].score if found else None


@pytest.mark.parametrize(
    ("fields", "prompt", "expected"),
    [
        ({"tags": ["deploy"], **QUIET}, "deploy it now", 3.0),  # tag, exact
        ({"tags": ["deploy"], **QUIET}, "deploying it now", 2.0),  # tag, fuzzy (stem)
        ({"tags": ["deploy"], **QUIET}, "deplyo it", 2.0),  # adjacent swap: one edit (OSA)
        ({"tags": ["release train"], **QUIET}, "catch the release train", 5.0),  # phrase
        ({"tags": ["release train"], **QUIET}, "catch the releases trains", 5.0),  # fuzzy words
        ({"tags": ["release train"], **QUIET}, "train the release", None),  # order matters
        ({"tags": ["x"], "title": "Widget Deploy", "summary": "Zzz"}, "widget", 2.0),  # title
        ({"tags": ["x"], "title": "Widget Deploy", "summary": "Zzz"}, "widgets", 1.0),
        ({"tags": ["x"], "title": "Qqq", "summary": "ship widget builds"}, "shipping", 1.0),
        ({"tags": ["x"], "title": "Qqq", "summary": "ship widget builds"}, "ship", 1.0),
        (
            {"tags": ["deploy", "release train"], "title": "Deploy", "summary": "deploy"},
            "deploy on the release train",
            3.0 + 5.0 + 2.0 + 1.0,
        ),
    ],
)
def test_field_weights(fields: dict[str, object], prompt: str, expected: float | None) -> None:
    lib = library(recipe("r", **fields))
    assert score(prompt, lib, "r") == expected


def test_hits_explain_the_score() -> None:
    lib = library(recipe("r", tags=["deploy", "release train"], not_when=["dry run"], **QUIET))
    hit = match("deploy the release train as a dry run", lib).considered[0]
    assert hit.hits == ["tag 'release train' +5", "tag 'deploy' +3", "not-when 'dry run' -5"]


def test_anti_trigger_word_subtracts_and_vetoes() -> None:
    lib = library(recipe("ship", tags=["deploy", "release"], not_when=["rollback"], **QUIET))
    clean = match("deploy the release", lib).considered[0]
    against = match("deploy the release, then rollbacks", lib).considered[0]
    assert (clean.score, clean.anti_penalty, clean.anti_vetoed) == (6.0, 0.0, False)
    assert (against.score, against.anti_penalty, against.anti_vetoed) == (3.0, 3.0, True)


def test_anti_trigger_phrase_subtracts_five() -> None:
    lib = library(recipe("ship", tags=["deploy", "release"], not_when=["dry run"], **QUIET))
    hit = match("deploy the release as a dry run", lib).considered[0]
    assert (hit.score, hit.anti_penalty) == (1.0, 5.0)
    assert match("deploy the release, run it dry", lib).considered[0].anti_penalty == 0.0


def test_anti_trigger_veto_caps_a_clear_leader_at_low() -> None:
    lib = library(
        recipe("ship", tags=["deploy", "release", "rollout", "ship"], not_when=["staging"], **QUIET)
    )
    clear = match("deploy release rollout ship", lib)
    assert (clear.tier, clear.matches[0].score) == ("high", 12.0)
    vetoed = match("deploy release rollout ship to staging", lib)
    assert vetoed.matches[0].score == 9.0  # still far above threshold + 3 ...
    assert vetoed.matches[0].anti_vetoed
    assert vetoed.tier == "low"  # ... but capped


def test_anti_trigger_can_hand_the_lead_to_another_recipe() -> None:
    lib = library(
        recipe("review", tags=["review", "code"], not_when=["contract"], **QUIET),
        recipe("legal", tags=["contract", "review"], **QUIET),
    )
    result = match("review this contract", lib)
    assert [m.slug for m in result.matches] == ["legal"]
    assert [s.slug for s in result.considered] == ["legal", "review"]


def _scored(*scores: float, vetoed: bool = False) -> list[ScoredRecipe]:
    return [
        ScoredRecipe(slug=f"s{i}", score=s, anti_vetoed=vetoed and i == 0)
        for i, s in enumerate(scores)
    ]


@pytest.mark.parametrize(
    ("scores", "vetoed", "tier"),
    [
        ((), False, "none"),
        ((3.0,), False, "low"),  # barely over the bar
        ((5.5,), False, "low"),  # below threshold + 3
        ((6.0,), False, "high"),  # threshold + 3, no runner-up
        ((6.0, 4.0), False, "high"),  # lead of exactly 2
        ((6.0, 4.5), False, "low"),  # near-tie
        ((9.0, 9.0), False, "low"),  # tie
        ((20.0, 3.0), True, "low"),  # anti-trigger veto
    ],
)
def test_confidence_tiers(scores: tuple[float, ...], vetoed: bool, tier: str) -> None:
    assert classify_confidence(_scored(*scores, vetoed=vetoed), DEFAULT_THRESHOLD) == tier


def test_threshold_is_the_bar_for_matches_and_tiers() -> None:
    lib = library(recipe("r", tags=["deploy", "release"], **QUIET))
    assert match("deploy release", lib).tier == "high"  # 6 >= 3 + 3
    assert match("deploy release", lib, threshold=4).tier == "low"
    raised = match("deploy release", lib, threshold=7)
    assert (raised.tier, raised.matches, raised.threshold) == ("none", [], 7.0)
    assert [s.slug for s in raised.considered] == ["r"]  # still reported for the trail
    assert match("deploy", lib).tier == "low"  # exactly 3
    assert match("nothing here", lib).tier == "none"


def test_matches_are_best_first_ties_by_slug() -> None:
    lib = library(
        recipe("b", tags=["deploy"], **QUIET),
        recipe("a", tags=["deploy"], **QUIET),
        recipe("c", tags=["deploy", "release"], **QUIET),
    )
    result = match("deploy a release", lib)
    assert [m.slug for m in result.matches] == ["c", "a", "b"]
    assert result.selected is not None and result.selected.slug == "c"
    assert result.catalog_size == 3


def test_match_entry_point_is_the_library_match() -> None:
    lib = library(recipe("r", tags=["deploy"]), recipe("s", tags=["release"]))
    for prompt in ("deploy", "release the deploy", "nothing"):
        assert match(prompt, lib) == lib.match(prompt) == lib.match(prompt, indexed=False)


# ---------------------------------------------------------------- fitness


def _fitness_lib() -> RecipeLibrary:
    return library(
        recipe("strong", tags=["deploy", "release", "ship"], **QUIET),  # 9
        recipe("proven", tags=["deploy", "release"], **QUIET),  # 6
        recipe("weak", tags=["ship"], **QUIET),  # 3: exactly the bar
        recipe("under", tags=["shipping"], **QUIET),  # 2: fuzzy, under the bar
    )


PROMPT = "deploy release ship"


def test_cold_library_is_exactly_the_lexical_result() -> None:
    lib = _fitness_lib()
    assert match(PROMPT, lib, fitness=lambda key: None) == match(PROMPT, lib)


def test_fitness_lifts_and_never_lowers() -> None:
    lib = _fitness_lib()
    lexical = {s.slug: s.score for s in match(PROMPT, lib).considered}
    records = {"forge/strong": -50.0, "forge/proven": 1.5, "forge/weak": 99.0}
    lifted = match(PROMPT, lib, fitness=records.get)
    by_slug = {s.slug: s for s in lifted.considered}
    assert by_slug["strong"].score == lexical["strong"]  # a bad record never buries a match
    assert by_slug["strong"].fitness_adjustment == 0.0
    assert (by_slug["proven"].score, by_slug["proven"].fitness_adjustment) == (7.5, 1.5)
    assert by_slug["weak"].fitness_adjustment == 2.0  # clamped to FITNESS_CAP
    for slug, s in by_slug.items():
        assert s.score >= lexical[slug]


def test_fitness_never_promotes_a_recipe_under_the_threshold() -> None:
    lib = _fitness_lib()
    lifted = match(PROMPT, lib, fitness=lambda key: 2.0)
    under = next(s for s in lifted.considered if s.slug == "under")
    assert (under.score, under.fitness_adjustment) == (2.0, 0.0)
    assert "under" not in [m.slug for m in lifted.matches]


def test_fitness_reorders_recipes_that_cleared_the_bar() -> None:
    lib = library(
        recipe("a", tags=["deploy", "release"], **QUIET), recipe("b", tags=["deploy", "release"])
    )
    lifted = match("deploy release", lib, fitness={"forge/b": 1.0}.get)
    assert [m.slug for m in lifted.matches] == ["b", "a"]


def test_fitness_is_keyed_by_owner_slug_then_slug() -> None:
    lib = library(recipe("r", tags=["deploy", "release"], owner="acme", **QUIET))
    asked: list[str] = []

    def fitness(key: str) -> float | None:
        asked.append(key)
        return {"acme/r": 1.0}.get(key)

    assert match("deploy release", lib, fitness=fitness).matches[0].fitness_adjustment == 1.0
    assert asked == ["acme/r"]
    other_owner = match("deploy release", lib, fitness={"forge/r": 1.0}.get)
    assert other_owner.matches[0].fitness_adjustment == 0.0  # another owner's record is not ours
    bare = match("deploy release", lib, fitness={"r": 0.5}.get)
    assert bare.matches[0].fitness_adjustment == 0.5


def test_nan_fitness_is_neutral() -> None:
    lib = _fitness_lib()
    assert match(PROMPT, lib, fitness=lambda key: math.nan) == match(PROMPT, lib)


def test_a_result_carries_the_best_max_considered_recipes() -> None:
    # 30 recipes clear the bar; the result keeps the best MAX_CONSIDERED, best first, both ways
    lib = library(
        *[recipe(f"r{i:02d}", tags=["deploy"], **QUIET) for i in range(28)],
        recipe("best", tags=["deploy", "release", "ship"], **QUIET),  # 9
        recipe("second", tags=["deploy"], title="Release", summary="Zzz"),  # 5
    )
    for indexed in (True, False):
        result = lib.match("deploy release ship", indexed=indexed)
        assert len(result.considered) == len(result.matches) == MAX_CONSIDERED
        assert [m.slug for m in result.matches[:3]] == ["best", "second", "r00"]
        assert result.matches[-1].slug == f"r{MAX_CONSIDERED - 3:02d}"
        assert result.catalog_size == 30
