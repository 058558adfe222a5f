"""Stage 6: the run's token budget split over the eight buckets, summing exactly to the total.

The total is the run's `bucket_tokens`, else the pack's `default_total`. The split is the
pack's for this intent if declared, else the seed's default. Shares are computed exactly
(fractions, not floats), floored, and the tokens the floors leave over go one each to the
buckets with the largest remainders (ties in bucket order): integers, summing to the total,
the same on every machine.
"""

from collections.abc import Mapping
from fractions import Fraction

from compiler.context.draft import Retrievers, filled
from compiler.context.errors import ContextError
from schemas.context import BUCKETS, Bucket, BudgetAllocation, ContextDraft
from schemas.error_codes import ErrorCode

DEFAULT_SPLIT: dict[Bucket, float] = {
    "system": 0.05,
    "developer": 0.05,
    "task": 0.10,
    "policy": 0.10,
    "tools": 0.15,
    "evidence": 0.30,
    "memory": 0.15,
    "session": 0.10,
}
TOLERANCE = 1e-6


def split_problem(split: Mapping[Bucket, float]) -> str | None:
    """Why a declared split cannot be used (negative share, sum not 1), or None."""
    negative = sorted(b for b, f in split.items() if f < 0)
    if negative:
        return f"negative fraction for {', '.join(negative)}"
    total = sum(split.values())
    if abs(total - 1.0) > TOLERANCE:
        return f"fractions sum to {total:.6g}, not 1"
    return None


def apportion(total: int, split: Mapping[Bucket, float]) -> dict[Bucket, int]:
    """Integer shares of `total` in proportion to `split`, summing exactly to `total`."""
    weights = {b: Fraction(split.get(b, 0.0)) for b in BUCKETS}
    scale = sum(weights.values())
    if total == 0 or scale == 0:
        return {b: 0 for b in BUCKETS}
    exact = {b: total * w / scale for b, w in weights.items()}
    shares = {b: int(q) for b, q in exact.items()}  # floor: every q is >= 0
    left = total - sum(shares.values())
    by_remainder = sorted(BUCKETS, key=lambda b: -(exact[b] - shares[b]))  # stable on ties
    for b in by_remainder[:left]:
        shares[b] += 1
    return shares


def allocate_budget(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`budget`: per-bucket token allocations for this intent, summing to the run's budget."""
    pack, ctx, intent = draft.pack, draft.run_context, filled(draft.intent, "intent")
    total = ctx.bucket_tokens if ctx.bucket_tokens is not None else pack.budget.default_total
    declared = pack.budget.splits.get(intent.intent_id)
    if declared is not None:
        problem = split_problem(declared)
        if problem is not None:
            raise ContextError(
                ErrorCode.CONTEXT_BAD_SPLIT,
                f"budget.splits[{intent.intent_id!r}] of context pack "
                f"{pack.contract_name}@{pack.contract_version}: {problem}. "
                "Make the fractions non-negative and sum to 1.",
            )
    split = declared if declared is not None else DEFAULT_SPLIT
    budget = BudgetAllocation(
        total_tokens=total,
        per_bucket=apportion(total, split),
        split_source="pack" if declared is not None else "default",
    )
    return draft.model_copy(update={"budget": budget})
