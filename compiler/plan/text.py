"""Deterministic text normalization for intent resolution: tokens, stems, phrases.

What a step's intent is read from is bounded (issue 35): its first `intent_words(n)` words, a
share of PLAN_INTENT_WORDS for a plan of n steps and at most INTENT_WORDS, so Pass B's and Pass
D's reading of a plan at its size caps (schemas/bounds.py) stays a bounded amount of work.
Stemming (pure Python snowball, the dominant cost) is cached per word, in one cache shared with
recipe matching (compiler/recipes/text.stem).
"""

import re
from functools import lru_cache
from itertools import islice

from compiler.recipes.text import stem

_WORD = re.compile(r"[a-z0-9]+", re.IGNORECASE)
STOP_WORDS = frozenset(
    "a an and are as at be by for from has have in into is it its of on or our that the their "
    "them these this those to was were what when which who will with these must should may all "
    "each every any per via than then so do does".split()
)
INTENT_WORDS = 300  # a step's intent: its label, objective and criteria, read this far at most
PLAN_INTENT_WORDS = 10_000  # ... and a plan's, over all its steps
MIN_INTENT_WORDS = 20  # what a step of the largest plan (schemas/bounds.STEPS_MAX) still gets


def intent_words(steps: int) -> int:
    """How many words of each step's text are read in a plan of `steps` steps."""
    return max(MIN_INTENT_WORDS, min(INTENT_WORDS, PLAN_INTENT_WORDS // max(1, steps)))


@lru_cache(maxsize=4096)
def stems(text: str, limit: int | None = None) -> tuple[str, ...]:
    """Lower-case, drop stop words and one-letter tokens, stem the rest; order is kept.

    Only the first `limit` words of `text` are read, when given.
    """
    found = (m.group(0).lower() for m in _WORD.finditer(text))
    return tuple(stem(w) for w in islice(found, limit) if len(w) > 1 and w not in STOP_WORDS)


def contains_phrase(haystack: tuple[str, ...], phrase: tuple[str, ...]) -> bool:
    """True when `phrase` occurs as a contiguous run of stems in `haystack`."""
    n = len(phrase)
    if n == 0 or n > len(haystack):
        return False
    return any(haystack[i : i + n] == phrase for i in range(len(haystack) - n + 1))
