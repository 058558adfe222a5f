"""Issue 35: recipe matching does bounded work whatever the objective's length.

A 5 MB mission held a worker for recipes__match's whole timeout (the tokenizer de-duplicated
with a list scan, the phrase check walked every word). A prompt is now read for its first
MATCH_WORDS words: the work is counted here as the words stemmed (the stem cache's misses),
never timed.
"""

import pytest

from activities.recipes.disk import load_library
from compiler.recipes import effort_signals
from compiler.recipes.index import PromptKeys
from compiler.recipes.text import MATCH_WORDS, stem, tokens
from schemas.bounds import OBJECTIVE_MAX
from tests.bench.plans import made_up_words
from tests.recipes.conftest import STDLIB_RECIPES


@pytest.fixture(scope="module")
def library():
    found = load_library(STDLIB_RECIPES)
    found.scorer()  # the index is built when a worker starts, not per match
    return found


def test_a_prompt_is_read_for_its_first_match_words_words():
    text = made_up_words(OBJECTIVE_MAX * 50, 1)  # a 1 MB objective: far past its cap
    keys = PromptKeys.of(text)
    assert len(keys.words) == MATCH_WORDS and len(keys.tokens) <= MATCH_WORDS
    assert len(tokens(text, 10)) <= 10


def test_a_maximum_objective_is_matched_with_bounded_work(library):
    objective = "reconcile the invoices against the rate cards " + made_up_words(OBJECTIVE_MAX, 2)
    assert len(objective) > OBJECTIVE_MAX - 100
    stem.cache_clear()
    result = library.match(objective[:OBJECTIVE_MAX])
    misses = stem.cache_info().misses
    # Each word read is stemmed at most once; nothing past MATCH_WORDS is read at all.
    assert misses <= MATCH_WORDS, misses
    assert result.considered  # the leading words still match the billing recipe
    # What follows the first MATCH_WORDS words changes nothing, however long it is.
    longer = library.match(objective + made_up_words(1_000_000, 3))
    assert longer.model_dump() == result.model_dump()
    assert stem.cache_info().misses == misses  # and none of it was even stemmed


def test_effort_signals_on_a_maximum_objective_stem_each_word_once():
    objective = made_up_words(OBJECTIVE_MAX, 4)
    stem.cache_clear()
    signals = effort_signals(objective)
    assert stem.cache_info().misses <= signals.words <= OBJECTIVE_MAX // 2
