"""Precomputed match keys for recipe words and prompts, and the inverted index over them.

FUZZY-MATCH (text.fuzzy) compares two words; scoring a prompt against 10,000 recipes that way is
millions of comparisons. Here each side is reduced once to keys (the word, its stem, its prefixes
of length >= 4, the one-deletion variants of its stem), so "does any prompt token fuzzily match this
recipe word" is a few set lookups; the index maps every key to the library's words that hold it,
and every word to the recipes holding it, so only recipes that can score at all are scored. The
answers are exactly those of text.fuzzy: the tests compare both on generated words, and the
indexed scorer with the full scan on every labelled prompt and on generated libraries.
"""

from dataclasses import dataclass, field

from rapidfuzz.distance import OSA

from compiler.recipes.text import (
    EDIT_MIN,
    MATCH_WORDS,
    MIN_TOKEN,
    PREFIX_MIN,
    STEM_MIN,
    STOP_WORDS,
    stem,
    tokens,
    words,
)
from schemas.recipes import Recipe


def _deletions(s: str) -> set[str]:
    return {s[:i] + s[i + 1 :] for i in range(len(s))}


def _prefixes(w: str) -> list[str]:
    return [w[:n] for n in range(PREFIX_MIN, len(w) + 1)]


@dataclass(frozen=True)
class WordKeys:
    word: str
    stem: str
    prefixes: tuple[str, ...]  # every prefix of length >= 4 (the word included), when len >= 4
    deletions: frozenset[str]  # one-deletion variants of the stem, when len >= 5

    @classmethod
    def of(cls, word: str) -> "WordKeys":
        st = stem(word)
        long_enough = len(word) >= EDIT_MIN
        return cls(
            word=word,
            stem=st,
            prefixes=tuple(_prefixes(word)) if len(word) >= PREFIX_MIN else (),
            deletions=frozenset(_deletions(st) | {st}) if long_enough else frozenset(),
        )


@dataclass
class PromptKeys:
    """The prompt's tokens as lookup sets; `matches(w)` is any(fuzzy(t, w) for t in tokens)."""

    tokens: list[str]
    words: list[str]
    exact: set[str] = field(default_factory=set)
    stems: set[str] = field(default_factory=set)  # stems of tokens of length >= 3
    long_tokens: set[str] = field(default_factory=set)  # tokens of length >= 4
    token_prefixes: set[str] = field(default_factory=set)  # prefixes >= 4 of tokens >= 4
    deletions: dict[str, set[str]] = field(default_factory=dict)  # variant -> stems (len >= 5)

    @classmethod
    def of(cls, prompt: str) -> "PromptKeys":
        toks = tokens(prompt, MATCH_WORDS)
        keys = cls(tokens=toks, words=words(prompt, MATCH_WORDS))
        for t in toks:
            keys.exact.add(t)
            if len(t) >= STEM_MIN:
                keys.stems.add(stem(t))
            if len(t) >= PREFIX_MIN:
                keys.long_tokens.add(t)
                keys.token_prefixes.update(_prefixes(t))
            if len(t) >= EDIT_MIN:
                st = stem(t)
                for variant in _deletions(st) | {st}:
                    keys.deletions.setdefault(variant, set()).add(st)
        return keys

    def equals(self, w: WordKeys) -> bool:
        return w.word in self.exact

    def matches(self, w: WordKeys) -> bool:
        if w.word in self.exact:
            return True
        n = len(w.word)
        if n >= STEM_MIN and w.stem in self.stems:
            return True
        if n >= PREFIX_MIN:
            # the recipe word is a prefix of a token, or a token is a prefix of the word
            if w.word in self.token_prefixes or any(p in self.long_tokens for p in w.prefixes):
                return True
        if n >= EDIT_MIN:
            for variant in w.deletions:
                for st in self.deletions.get(variant, ()):
                    if OSA.distance(st, w.stem, score_cutoff=1) <= 1:
                        return True
        return False


@dataclass(frozen=True)
class RecipeKeys:
    """A recipe's scoring surface, reduced to keys once when the library is indexed."""

    slug: str
    tag_words: tuple[WordKeys, ...]
    tag_phrases: tuple[tuple[str, ...], ...]
    title: tuple[WordKeys, ...]
    summary: tuple[WordKeys, ...]
    anti_words: tuple[WordKeys, ...]
    anti_phrases: tuple[tuple[str, ...], ...]

    @classmethod
    def of(cls, recipe: Recipe) -> "RecipeKeys":
        tag_words, tag_phrases = _split(recipe.tags)
        anti_words, anti_phrases = _split(recipe.not_when)
        return cls(
            slug=recipe.slug,
            tag_words=tag_words,
            tag_phrases=tag_phrases,
            title=tuple(WordKeys.of(w) for w in tokens(recipe.title)),
            summary=tuple(WordKeys.of(w) for w in tokens(recipe.summary)),
            anti_words=anti_words,
            anti_phrases=anti_phrases,
        )


def _split(items: list[str]) -> tuple[tuple[WordKeys, ...], tuple[tuple[str, ...], ...]]:
    singles: list[WordKeys] = []
    phrases: list[tuple[str, ...]] = []
    for item in items:
        ws = words(item)
        if len(ws) > 1:
            phrases.append(tuple(ws))
        elif ws:
            singles.append(WordKeys.of(ws[0]))
    return tuple(singles), tuple(phrases)


class InvertedIndex:
    """Match keys -> recipe words -> recipes: candidate generation at word granularity.

    A library of 10,000 recipes has a few thousand distinct words, so the prompt is first matched
    against the words (each checked once with PromptKeys.matches) and only then mapped to the
    recipes holding them. `reachable` is a superset of the words any prompt word fuzzily matches,
    stop-words included (a tag phrase's "shoulder" is reached only through the stop-word
    "should"); the scorer verifies every candidate, so the answers are those of the full scan.
    """

    def __init__(self, recipes: list[RecipeKeys]) -> None:
        self.words: dict[str, WordKeys] = {}  # every single word of tags, titles, summaries, anti
        self.recipes_of: dict[str, set[str]] = {}  # positive single word -> recipe slugs
        self.phrases_of: dict[str, set[tuple[str, ...]]] = {}  # phrase word -> phrases (tag, anti)
        self.phrase_recipes: dict[tuple[str, ...], set[str]] = {}  # tag phrase -> recipe slugs
        self.always: set[tuple[str, ...]] = set()  # phrases made only of stop-words and letters
        self.phrase_words: dict[tuple[str, ...], frozenset[str]] = {}  # phrase -> indexed words
        self.by_word: dict[str, set[str]] = {}
        self.by_stem: dict[str, set[str]] = {}
        self.by_prefix: dict[str, set[str]] = {}  # every prefix >= 4 of words >= 4
        self.by_deletion: dict[str, set[str]] = {}
        for keys in recipes:
            for w in (*keys.tag_words, *keys.title, *keys.summary):
                self._add(w)
                self.recipes_of.setdefault(w.word, set()).add(keys.slug)
            for w in keys.anti_words:
                self._add(w)
            for phrase in (*keys.tag_phrases, *keys.anti_phrases):
                self._add_phrase(phrase)
            for phrase in keys.tag_phrases:
                self.phrase_recipes.setdefault(phrase, set()).add(keys.slug)

    def _add(self, w: WordKeys) -> None:
        if w.word in self.words:
            return
        self.words[w.word] = w
        self._key(w)

    def _key(self, w: WordKeys) -> None:
        self.by_word.setdefault(w.word, set()).add(w.word)
        self.by_stem.setdefault(w.stem, set()).add(w.word)
        for p in w.prefixes:
            self.by_prefix.setdefault(p, set()).add(w.word)
        for d in w.deletions:
            self.by_deletion.setdefault(d, set()).add(w.word)

    def _add_phrase(self, phrase: tuple[str, ...]) -> None:
        indexed = [x for x in phrase if x not in STOP_WORDS and len(x) >= MIN_TOKEN]
        self.phrase_words[phrase] = frozenset(indexed)
        if not indexed:
            self.always.add(phrase)
        for x in indexed:
            if x not in self.phrases_of:
                self._key(WordKeys.of(x))
            self.phrases_of.setdefault(x, set()).add(phrase)

    def reachable(self, prompt: PromptKeys) -> set[str]:
        """Indexed words some prompt word may fuzzily match (a superset; verify each)."""
        found: set[str] = set()
        for t in dict.fromkeys(w for w in prompt.words if len(w) >= MIN_TOKEN):
            found |= self.by_word.get(t, _EMPTY)
            if len(t) >= STEM_MIN:
                found |= self.by_stem.get(stem(t), _EMPTY)
            if len(t) >= PREFIX_MIN:
                found |= self.by_prefix.get(t, _EMPTY)  # t is a prefix of an indexed word
                for p in _prefixes(t):  # an indexed word is a prefix of t
                    found |= self.by_word.get(p, _EMPTY)
            if len(t) >= EDIT_MIN:
                st = stem(t)
                for variant in _deletions(st) | {st}:
                    found |= self.by_deletion.get(variant, _EMPTY)
        return found

    def phrases(self, reachable: set[str]) -> set[tuple[str, ...]]:
        """Tag and anti phrases all of whose indexed words are reachable (verify each)."""
        found: set[tuple[str, ...]] = set()
        for w in reachable:
            found |= self.phrases_of.get(w, set())
        return {p for p in found if self.phrase_words[p] <= reachable} | self.always

    def candidates(self, prompt: PromptKeys) -> set[str]:
        """Recipes that may have positive evidence for `prompt` (a superset)."""
        reach = self.reachable(prompt)
        found: set[str] = set()
        for w in reach:
            found |= self.recipes_of.get(w, _EMPTY)
        for phrase in self.phrases(reach):
            found |= self.phrase_recipes.get(phrase, _EMPTY)
        return found


_EMPTY: frozenset[str] = frozenset()
