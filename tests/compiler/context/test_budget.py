"""Stage 6: allocations are explicit integers, per intent if declared, summing to the total."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from compiler.context import ContextError, compile_context
from compiler.context.budget import DEFAULT_SPLIT, allocate_budget, apportion
from compiler.context.intent import classify_intent
from schemas.context import BUCKETS
from tests.compiler.context.build import draft, pack, request, run_ctx, staged


def _allocate(p, **ctx):
    c, r = run_ctx(**ctx), request()
    return staged(draft(p, c, r), classify_intent, allocate_budget).budget


@st.composite
def splits(draw):
    """Random non-negative fractions over a random subset of buckets, normalized to sum to 1."""
    chosen = draw(st.lists(st.sampled_from(BUCKETS), min_size=1, unique=True))
    weights = [draw(st.integers(0, 1000)) for _ in chosen]
    if not any(weights):
        weights[0] = 1
    total = sum(weights)
    return {b: w / total for b, w in zip(chosen, weights, strict=True)}


@given(st.integers(0, 10**12))
def test_default_split_sums_exactly_to_any_total(total):
    alloc = _allocate(pack(), bucket_tokens=total)
    assert sum(alloc.per_bucket.values()) == total
    assert list(alloc.per_bucket) == list(BUCKETS)
    assert alloc.split_source == "default"
    for b in BUCKETS:  # each share is within one token of its exact proportion
        assert abs(alloc.per_bucket[b] - total * DEFAULT_SPLIT[b]) < 1 + total * 1e-9


@given(st.integers(0, 10**9), splits())
def test_declared_split_sums_exactly_to_the_total(total, split):
    p = pack(budget={"default_total": total, "splits": {"forge.execute": split}})
    alloc = _allocate(p)
    assert alloc.total_tokens == total
    assert sum(alloc.per_bucket.values()) == total
    assert alloc.split_source == "pack"
    assert all(v >= 0 for v in alloc.per_bucket.values())
    assert all(alloc.per_bucket[b] == 0 for b in BUCKETS if split.get(b, 0) == 0)


def test_remainder_goes_to_largest_remainders_ties_in_bucket_order():
    assert apportion(10, {"system": 1 / 3, "developer": 1 / 3, "task": 1 / 3}) == {
        "system": 4,
        "developer": 3,
        "task": 3,
        "policy": 0,
        "tools": 0,
        "evidence": 0,
        "memory": 0,
        "session": 0,
    }
    assert apportion(7, DEFAULT_SPLIT) == apportion(7, dict(reversed(DEFAULT_SPLIT.items())))


def test_run_budget_overrides_pack_default_and_intent_split_applies_to_its_intent_only():
    p = pack(
        budget={"default_total": 1000, "splits": {"forge.execute": {"task": 0.5, "evidence": 0.5}}}
    )
    assert _allocate(p).per_bucket["task"] == 500
    assert _allocate(p, bucket_tokens=90).per_bucket["evidence"] == 45
    c, r = run_ctx(), request(intent_id="forge.execute.small")
    other = staged(draft(p, c, r), classify_intent, allocate_budget).budget
    assert other.split_source == "default" and other.per_bucket["evidence"] == 300


@pytest.mark.parametrize(
    ("split", "problem"),
    [
        ({"task": 0.5, "evidence": 0.4}, "sum to 0.9, not 1"),
        ({"task": 1.2, "evidence": -0.2}, "negative fraction for evidence"),
    ],
)
def test_a_split_that_does_not_sum_to_one_is_an_error(split, problem):
    p = pack(budget={"splits": {"forge.execute": split}})
    with pytest.raises(ContextError) as err:
        compile_context(p, run_ctx(), request())
    assert err.value.code == "CONTEXT_BAD_SPLIT"
    assert problem in str(err.value) and "budget.splits['forge.execute']" in str(err.value)


def test_a_split_within_tolerance_is_accepted():
    p = pack(
        budget={
            "default_total": 100,
            "splits": {"forge.execute": {"task": 0.5, "evidence": 0.5000004}},
        }
    )
    assert sum(_allocate(p).per_bucket.values()) == 100
