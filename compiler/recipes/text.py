"""Tokens and the graduated fuzzy match of seed 004 §3.2.

A prompt word matches a recipe word when they are equal; when they share a stem (snowball English,
both at least 3 long); when one is a prefix of the other (both at least 4 long); or when their stems
are one edit apart, a swap of two adjacent letters counting as one edit (optimal string alignment;
both at least 5 long). Tiny tokens therefore match only by equality.
"""

import re
from functools import lru_cache
from itertools import islice

import snowballstemmer
from rapidfuzz.distance import OSA

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
MIN_TOKEN = 2
# A prompt is matched on its first MATCH_WORDS words: what a recipe match (and a step's skill
# discovery) does is then bounded whatever the text's length (issue 35). An objective's cap
# (schemas/bounds.OBJECTIVE_MAX, 20,000 characters) is about 3,000 words of prose.
MATCH_WORDS = 2_000
STEM_MIN, PREFIX_MIN, EDIT_MIN = 3, 4, 5

# English function words and request filler: they carry no task signal.
STOP_WORDS = frozenset(
    """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves let lets let's please
    pls can't cannot i'm i've it's that's there's we're you're don't doesn't isn't aren't won't
    need needs want wants like also get got make sure thing things something stuff via per
    """.split()
)


def _raw_words(text: str, limit: int | None) -> list[str]:
    found = (m.group(0).lower() for m in _WORD_ANY_CASE.finditer(text))
    return list(islice(found, limit))


_WORD_ANY_CASE = re.compile(_WORD.pattern, re.IGNORECASE)


def words(text: str, limit: int | None = None) -> list[str]:
    """Every lower-cased word (the first `limit` if given), in order (phrases match on these)."""
    return [w.replace("'", "") for w in _raw_words(text, limit)]


def tokens(text: str, limit: int | None = None) -> list[str]:
    """The words (the first `limit` if given), de-duplicated, in order, without stop-words.

    Tokens shorter than MIN_TOKEN are dropped too.
    """
    out: list[str] = []
    seen: set[str] = set()
    for raw in _raw_words(text, limit):
        if raw in STOP_WORDS:
            continue
        word = raw.replace("'", "")
        if len(word) >= MIN_TOKEN and word not in STOP_WORDS and word not in seen:
            seen.add(word)
            out.append(word)
    return out


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    # One stemmer per call: it keeps its word in itself, and plans compile on several threads.
    return str(snowballstemmer.stemmer("english").stemWord(word))


@lru_cache(maxsize=65536)
def fuzzy(a: str, b: str) -> bool:
    """FUZZY-MATCH of seed 004 §3.2, graduated by length."""
    if a == b:
        return True
    la, lb = len(a), len(b)
    if la >= STEM_MIN and lb >= STEM_MIN and stem(a) == stem(b):
        return True
    if la >= PREFIX_MIN and lb >= PREFIX_MIN and (a.startswith(b) or b.startswith(a)):
        return True
    if la >= EDIT_MIN and lb >= EDIT_MIN:
        return OSA.distance(stem(a), stem(b), score_cutoff=1) <= 1
    return False


def contains_phrase(prompt_words: list[str], phrase: list[str]) -> bool:
    """True when the prompt holds the phrase's words consecutively, each matching fuzzily."""
    n = len(phrase)
    if n == 0 or n > len(prompt_words):
        return False
    for start in range(len(prompt_words) - n + 1):
        if all(fuzzy(prompt_words[start + i], phrase[i]) for i in range(n)):
            return True
    return False
