"""Issue 35: compiling a plan at its size caps (schemas/bounds.py) is bounded work.

Pass B reads each step's intent, and Pass D its skill discovery, from the step's first
`intent_words(n)` words; the plan-wide total is PLAN_INTENT_WORDS. Work is counted as words
stemmed (the shared stem cache's misses: snowball is the passes' dominant cost), never timed.
"""

import json

from compiler.plan.text import INTENT_WORDS, MIN_INTENT_WORDS, PLAN_INTENT_WORDS, intent_words
from compiler.recipes.text import stem
from schemas.bounds import PLAN_MAX_BYTES, STEPS_MAX
from tests.bench.plans import generated_plan, maximum_plan
from tests.compiler.conftest import compile_raw


def test_the_words_read_per_plan_are_bounded_at_every_size():
    for n in range(1, STEPS_MAX + 1):
        per_step = intent_words(n)
        assert MIN_INTENT_WORDS <= per_step <= INTENT_WORDS
        assert n * per_step <= max(PLAN_INTENT_WORDS, n * MIN_INTENT_WORDS)


def test_a_maximum_size_plan_compiles_with_bounded_work():
    raw = maximum_plan(140)
    size = len(json.dumps(raw, separators=(",", ":")))
    assert PLAN_MAX_BYTES - 100_000 < size <= PLAN_MAX_BYTES, size
    short = generated_plan(140)
    stem.cache_clear()
    compile_raw(short)
    base = stem.cache_info().misses  # the type library's own words, the short steps' words
    stem.cache_clear()
    compiled = compile_raw(raw)
    extra = stem.cache_info().misses - base
    # Every step's text was read for intent_words(140) words (Pass B and Pass D read the same
    # leading words, so each is stemmed once): a bound, whatever the steps hold past it.
    assert 0 < extra <= 140 * intent_words(140) <= PLAN_INTENT_WORDS, extra
    assert len(compiled.steps) == 140
    assert all(s.domain_pack_ids == ["billing-audit"] for s in compiled.steps)
