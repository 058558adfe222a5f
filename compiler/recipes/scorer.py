"""SCORE_RECIPE over the inverted index: the reference scorer's answers at a fraction of its cost.

The reference (`match.rank`) scores every recipe word by word. Here the prompt is matched once
against the library's distinct words (PromptKeys.matches, for the words the index reaches), and
each matched word adds its weight to every recipe holding it through posting lists of slugs —
one C-level Counter update per word. Only the best MAX_CONSIDERED recipes are then laid out with
their hits. Scores, order, tier and hits equal the reference's: the tests compare both on every
labelled prompt and on generated libraries.
"""

import heapq
from collections import Counter
from dataclasses import dataclass

from compiler.recipes.index import InvertedIndex, PromptKeys, RecipeKeys, WordKeys
from compiler.recipes.match import (
    ANTI_PHRASE,
    ANTI_WORD,
    FITNESS_CAP,
    MAX_CONSIDERED,
    SUMMARY_FUZZY,
    TAG_EXACT,
    TAG_FUZZY,
    TAG_PHRASE,
    TITLE_EXACT,
    TITLE_FUZZY,
    Fitness,
    fitness_lift,
    scored_recipe,
)
from compiler.recipes.text import contains_phrase
from schemas.recipes import Recipe, ScoredRecipe

_Hit = tuple[str, str]  # word, hit text
_PhraseHit = tuple[tuple[str, ...], str]
Phrase = tuple[str, ...]


def _times(weight: float) -> int:
    # Posting lists repeat a slug `weight` times, so the weights must be whole numbers.
    if weight != int(weight) or weight < 1:
        raise ValueError(f"scoring weight {weight} must be a whole number >= 1")
    return int(weight)


@dataclass(frozen=True)
class _Layout:
    """One recipe's scoring surface, in SCORE_RECIPE's order, with its hit texts."""

    tag_phrases: tuple[_PhraseHit, ...]
    tag_words: tuple[tuple[str, str, str], ...]  # word, hit when equal, hit when fuzzy
    title: tuple[tuple[str, str, str], ...]
    summary: tuple[_Hit, ...]
    anti_phrases: tuple[_PhraseHit, ...]
    anti_words: tuple[_Hit, ...]

    def score(
        self, matched: set[str], exact: set[str], phrases: set[Phrase]
    ) -> tuple[float, float, list[str]]:
        """score_recipe, given the words the prompt matches (`exact`: equals) and phrases."""
        score, hits = 0.0, []
        for phrase, hit in self.tag_phrases:
            if phrase in phrases:
                score += TAG_PHRASE
                hits.append(hit)
        for fields, equal_w, fuzzy_w in (
            (self.tag_words, TAG_EXACT, TAG_FUZZY),
            (self.title, TITLE_EXACT, TITLE_FUZZY),
        ):
            for word, hit_equal, hit_fuzzy in fields:
                if word in exact:
                    score += equal_w
                    hits.append(hit_equal)
                elif word in matched:
                    score += fuzzy_w
                    hits.append(hit_fuzzy)
        for word, hit in self.summary:
            if word in matched:
                score += SUMMARY_FUZZY
                hits.append(hit)
        penalty = 0.0
        for phrase, hit in self.anti_phrases:
            if phrase in phrases:
                penalty += ANTI_PHRASE
                hits.append(hit)
        for word, hit in self.anti_words:
            if word in matched:
                penalty += ANTI_WORD
                hits.append(hit)
        return score, penalty, hits


class _Texts:
    """Hit texts, one shared string each (a 10,000-recipe library repeats most of them)."""

    def __init__(self) -> None:
        self._seen: dict[str, str] = {}

    def text(self, label: str, word: str, sign: str, weight: float) -> str:
        t = f"{label}'{word}' {sign}{weight:g}"
        return self._seen.setdefault(t, t)

    def layout(self, k: RecipeKeys) -> _Layout:
        def words(label: str, ws: tuple[WordKeys, ...], sign: str, w: float) -> tuple[_Hit, ...]:
            return tuple((x.word, self.text(label, x.word, sign, w)) for x in ws)

        def both(
            label: str, ws: tuple[WordKeys, ...], equal: float, fuzzy: float
        ) -> tuple[tuple[str, str, str], ...]:
            return tuple(
                (
                    x.word,
                    self.text(f"{label} ", x.word, "+", equal),
                    self.text(f"{label} ~", x.word, "+", fuzzy),
                )
                for x in ws
            )

        def phrases(
            label: str, ps: tuple[Phrase, ...], sign: str, w: float
        ) -> tuple[_PhraseHit, ...]:
            return tuple((p, self.text(label, " ".join(p), sign, w)) for p in ps)

        return _Layout(
            tag_phrases=phrases("tag ", k.tag_phrases, "+", TAG_PHRASE),
            tag_words=both("tag", k.tag_words, TAG_EXACT, TAG_FUZZY),
            title=both("title", k.title, TITLE_EXACT, TITLE_FUZZY),
            summary=words("summary ~", k.summary, "+", SUMMARY_FUZZY),
            anti_phrases=phrases("not-when ", k.anti_phrases, "-", ANTI_PHRASE),
            anti_words=words("not-when ~", k.anti_words, "-", ANTI_WORD),
        )


class IndexedScorer:
    """The inverted index, the posting lists and the per-recipe layouts of one library."""

    def __init__(self, recipes: dict[str, Recipe], keys: dict[str, RecipeKeys]) -> None:
        self.index = InvertedIndex(list(keys.values()))
        self._recipes = recipes
        texts = _Texts()
        self._layout = {slug: texts.layout(k) for slug, k in keys.items()}
        # word -> slugs, each repeated by the weight the word earns there (equal / fuzzy)
        self._equal: dict[str, list[str]] = {}
        self._fuzzy: dict[str, list[str]] = {}
        self._anti: dict[str, list[str]] = {}
        self._phrase: dict[Phrase, list[str]] = {}
        self._anti_phrase: dict[Phrase, list[str]] = {}
        for slug, k in keys.items():
            for ws, equal, fuzzy in (
                (k.tag_words, TAG_EXACT, TAG_FUZZY),
                (k.title, TITLE_EXACT, TITLE_FUZZY),
                (k.summary, SUMMARY_FUZZY, SUMMARY_FUZZY),
            ):
                for w in ws:
                    self._equal.setdefault(w.word, []).extend([slug] * _times(equal))
                    self._fuzzy.setdefault(w.word, []).extend([slug] * _times(fuzzy))
            for w in k.anti_words:
                self._anti.setdefault(w.word, []).extend([slug] * _times(ANTI_WORD))
            for p in k.tag_phrases:
                self._phrase.setdefault(p, []).extend([slug] * _times(TAG_PHRASE))
            for p in k.anti_phrases:
                self._anti_phrase.setdefault(p, []).extend([slug] * _times(ANTI_PHRASE))

    def rank(
        self, prompt: PromptKeys, *, threshold: float, fitness: Fitness | None
    ) -> list[ScoredRecipe]:
        """The best MAX_CONSIDERED recipes with positive evidence, as `match.rank` orders them."""
        index = self.index
        reach = index.reachable(prompt)
        matched = {w for w in reach if w in index.words and prompt.matches(index.words[w])}
        exact = matched & prompt.exact
        phrases = {p for p in index.phrases(reach) if contains_phrase(prompt.words, list(p))}
        positive: Counter[str] = Counter()
        penalty: Counter[str] = Counter()
        for w in matched:
            positive.update((self._equal if w in exact else self._fuzzy).get(w, ()))
            penalty.update(self._anti.get(w, ()))
        for p in phrases:
            positive.update(self._phrase.get(p, ()))
            penalty.update(self._anti_phrase.get(p, ()))
        base = {slug: float(n - penalty[slug]) for slug, n in positive.items()}
        lifts = self._lifts(base, threshold, fitness)
        best = heapq.nsmallest(
            MAX_CONSIDERED, ((-(b + lifts.get(slug, 0.0)), slug) for slug, b in base.items())
        )
        scored = []
        for _, slug in best:
            pos, pen, hits = self._layout[slug].score(matched, exact, phrases)
            scored.append(scored_recipe(self._recipes[slug], pos, pen, lifts.get(slug, 0.0), hits))
        return scored

    def _lifts(
        self, base: dict[str, float], threshold: float, fitness: Fitness | None
    ) -> dict[str, float]:
        """Fitness lifts for the recipes that cleared the bar and could still reach the top.

        A lift is at most FITNESS_CAP, so a recipe more than that below the MAX_CONSIDERED-th
        best base score cannot enter the result; its record is not looked up.
        """
        if fitness is None:
            return {}
        floor = threshold
        if len(base) > MAX_CONSIDERED:
            floor = max(floor, heapq.nlargest(MAX_CONSIDERED, base.values())[-1] - FITNESS_CAP)
        return {
            slug: fitness_lift(self._recipes[slug], fitness)
            for slug, b in base.items()
            if b >= floor
        }
