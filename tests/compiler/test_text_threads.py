"""Stemming is safe on several threads at once: the API compiles submitted plans concurrently
(POST /v1/runs runs each compile in a thread), and a stemmer shared between them mixed their
words (IndexError inside snowballstemmer, a 500 for a valid plan)."""

from concurrent.futures import ThreadPoolExecutor

from compiler.plan.text import stems
from compiler.recipes.text import stem

TEXTS = [
    f"normalizing operational classifications {i} generalization rationalizations "
    f"hopefulness conditionally {i * 7} sensibilities internationalization"
    for i in range(400)
]


def test_plan_stems_on_eight_threads_equal_those_on_one():
    uncached = stems.__wrapped__  # the stemmer itself, every call: not the lru_cache's answer
    alone = [uncached(t) for t in TEXTS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(uncached, TEXTS)) == alone


def test_recipe_word_stems_on_eight_threads_equal_those_on_one():
    uncached = stem.__wrapped__
    words = [w for t in TEXTS for w in t.split()]
    alone = [uncached(w) for w in words]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for _ in range(5):
            assert list(pool.map(uncached, words)) == alone
