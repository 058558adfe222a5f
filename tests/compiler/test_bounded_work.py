"""Issue 35: compiling a plan at its size caps (schemas/bounds.py) is bounded work.

Pass B reads each step's intent, and Pass D its skill discovery, from the step's first
`intent_words(n)` words; the plan-wide total is PLAN_INTENT_WORDS. Work is counted as words
stemmed (the shared stem cache's misses: snowball is the passes' dominant cost), never timed.
"""

import json
import random
import string

from compiler.plan.text import INTENT_WORDS, MIN_INTENT_WORDS, PLAN_INTENT_WORDS, intent_words
from compiler.recipes.text import stem
from schemas.bounds import OBJECTIVE_MAX, PLAN_MAX_BYTES, PROSE_MAX, STEPS_MAX
from tests.bench.plans import generated_plan
from tests.compiler.conftest import compile_raw


def _random_words(chars: int, rnd: random.Random) -> str:
    out, size = [], 0
    while size < chars:
        word = "".join(rnd.choice(string.ascii_lowercase) for _ in range(rnd.randint(5, 9)))
        out.append(word)
        size += len(word) + 1
    return " ".join(out)[:chars]


def maximum_plan(steps: int, seed: int = 7) -> dict:
    """`steps` steps, each with the longest objective and criteria allowed, all distinct words."""
    rnd = random.Random(seed)
    raw = generated_plan(steps)
    raw["mission"] = _random_words(OBJECTIVE_MAX, rnd)
    for step in raw["steps"]:
        lead = "MUST normalize timesheet rows. "
        step["objective"] = lead + _random_words(OBJECTIVE_MAX - len(lead), rnd)
        step["success_criteria"] = _random_words(PROSE_MAX, rnd)
    return raw


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
