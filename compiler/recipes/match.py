"""The recipe matcher of seed 004 §3: weighted fuzzy scoring, anti-triggers, tiers, fitness.

Precedence is strict: the lexical base (tags, title, summary, minus anti-trigger penalties), then
the empirical-fitness adjustment, only for recipes that cleared the lexical threshold and only
upwards — fitness can lift a proven recipe, never bury a lexically relevant one, and a recipe with
no record adds nothing, so a cold library behaves exactly like the pure lexical matcher.
"""

from collections.abc import Callable, Iterable

from compiler.recipes.index import PromptKeys, RecipeKeys
from compiler.recipes.text import contains_phrase
from schemas.recipes import MatchResult, Recipe, ScoredRecipe, Tier

DEFAULT_THRESHOLD = 3.0
HIGH_MARGIN = 3.0  # a high tier needs top >= threshold + 3 ...
LEAD = 2.0  # ... and a lead of 2 over the runner-up
TAG_PHRASE, TAG_EXACT, TAG_FUZZY = 5.0, 3.0, 2.0
TITLE_EXACT, TITLE_FUZZY, SUMMARY_FUZZY = 2.0, 1.0, 1.0
ANTI_PHRASE, ANTI_WORD = 5.0, 3.0
VETO_AT = 3.0  # an anti-trigger penalty this large caps the recipe at low confidence
FITNESS_CAP = 2.0  # the most a fitness record can add
# A result carries the best recipes only: in a library of 10,000 a prompt gives hundreds, even
# thousands, some evidence, and building them all would cost more than scoring (and bloat the
# run history the result lands in). The tier needs two; the trail shows ten.
MAX_CONSIDERED = 20

Fitness = Callable[[str], float | None]


def score_recipe(prompt: PromptKeys, keys: RecipeKeys) -> tuple[float, float, list[str]]:
    """SCORE_RECIPE: (positive score, anti-trigger penalty, what scored)."""
    score, hits = 0.0, []
    for phrase in keys.tag_phrases:
        if contains_phrase(prompt.words, list(phrase)):
            score += TAG_PHRASE
            hits.append(f"tag '{' '.join(phrase)}' +{TAG_PHRASE:g}")
    for w in keys.tag_words:
        if prompt.equals(w):
            score += TAG_EXACT
            hits.append(f"tag '{w.word}' +{TAG_EXACT:g}")
        elif prompt.matches(w):
            score += TAG_FUZZY
            hits.append(f"tag ~'{w.word}' +{TAG_FUZZY:g}")
    for w in keys.title:
        if prompt.equals(w):
            score += TITLE_EXACT
            hits.append(f"title '{w.word}' +{TITLE_EXACT:g}")
        elif prompt.matches(w):
            score += TITLE_FUZZY
            hits.append(f"title ~'{w.word}' +{TITLE_FUZZY:g}")
    for w in keys.summary:
        if prompt.matches(w):
            score += SUMMARY_FUZZY
            hits.append(f"summary ~'{w.word}' +{SUMMARY_FUZZY:g}")
    penalty = 0.0
    for phrase in keys.anti_phrases:
        if contains_phrase(prompt.words, list(phrase)):
            penalty += ANTI_PHRASE
            hits.append(f"not-when '{' '.join(phrase)}' -{ANTI_PHRASE:g}")
    for w in keys.anti_words:
        if prompt.matches(w):
            penalty += ANTI_WORD
            hits.append(f"not-when ~'{w.word}' -{ANTI_WORD:g}")
    return score, penalty, hits


def rank(
    prompt: PromptKeys,
    recipes: Iterable[tuple[Recipe, RecipeKeys]],
    *,
    threshold: float,
    fitness: Fitness | None,
) -> list[ScoredRecipe]:
    """Every recipe with positive evidence, scored and sorted best first (ties by slug).

    A recipe the prompt only argues against is left out: it could never be selected, and the
    index (built over positive evidence) would not propose it, so both paths agree.
    """
    scored = []
    for recipe, keys in recipes:
        positive, penalty, hits = score_recipe(prompt, keys)
        if positive > 0:
            base = positive - penalty
            lift = fitness_lift(recipe, fitness) if base >= threshold else 0.0
            scored.append(scored_recipe(recipe, positive, penalty, lift, hits))
    scored.sort(key=lambda s: (-s.score, s.slug))
    return scored


def scored_recipe(
    recipe: Recipe, positive: float, penalty: float, lift: float, hits: list[str]
) -> ScoredRecipe:
    base = positive - penalty
    return ScoredRecipe(
        slug=recipe.slug,
        owner=recipe.owner,
        score=base + lift,
        anti_penalty=penalty,
        fitness_adjustment=lift,
        anti_vetoed=penalty >= VETO_AT,
        hits=hits,
    )


def fitness_lift(recipe: Recipe, fitness: Fitness | None) -> float:
    """The fitness seam, keyed by owner/slug (then the bare slug): a lift in [0, FITNESS_CAP]."""
    if fitness is None:
        return 0.0
    value = fitness(recipe.key)
    if value is None:
        value = fitness(recipe.slug)
    if value is None or value != value:  # no record, or NaN: neutral
        return 0.0
    return max(0.0, min(float(value), FITNESS_CAP))


def classify_confidence(matches: list[ScoredRecipe], threshold: float) -> Tier:
    """CLASSIFY_CONFIDENCE of seed 004 §3.4 over the recipes that cleared the threshold."""
    if not matches:
        return "none"
    top = matches[0].score
    second = matches[1].score if len(matches) > 1 else 0.0
    if matches[0].anti_vetoed:
        return "low"
    if top >= threshold + HIGH_MARGIN and top - second >= LEAD:
        return "high"
    return "low"


def result(considered: list[ScoredRecipe], threshold: float, catalog_size: int) -> MatchResult:
    """The tier and the best MAX_CONSIDERED recipes (`considered` best first, sorted)."""
    considered = considered[:MAX_CONSIDERED]
    matches = [s for s in considered if s.score >= threshold]
    return MatchResult(
        tier=classify_confidence(matches, threshold),
        matches=matches,
        considered=considered,
        threshold=threshold,
        catalog_size=catalog_size,
    )
