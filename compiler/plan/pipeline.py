"""The order of the passes, in one place; Pass A's candidate goes in, a CompiledPlan comes out."""

from collections.abc import Callable
from typing import Any

from compiler.plan.context import CompileContext
from compiler.plan.passes.contracts import contracts
from compiler.plan.passes.freeze import freeze
from compiler.plan.passes.resolve import resolve
from compiler.plan.passes.skills import skills
from schemas.base import FrozenModel
from schemas.compiled import CompiledPlan
from schemas.plan import PlannerCandidate

Pass = Callable[..., FrozenModel]
PASSES: tuple[tuple[str, Pass], ...] = (
    ("B", resolve),
    ("C", contracts),
    ("D", skills),
    ("E", freeze),
)


def activity_name(fn: Pass) -> str:
    """The Temporal activity that runs a pass (persisted in histories: never rename a pass)."""
    return f"compile__{fn.__name__}"


# Runs started before compile__passes ran these in this order; the last one froze the plan.
COMPILE_ACTIVITIES: tuple[str, ...] = tuple(activity_name(fn) for _, fn in PASSES)
# The one activity that runs every pass in PASSES' order and freezes the plan (FreezeResult).
COMPILE_PASSES = "compile__passes"


def run_passes(candidate: PlannerCandidate, *, ctx: CompileContext) -> dict[str, FrozenModel]:
    """Every pass's output by letter, A being the candidate itself (for `forge explain`)."""
    stages: dict[str, FrozenModel] = {"A": candidate}
    current: Any = candidate
    for letter, fn in PASSES:
        current = fn(current, ctx=ctx)
        stages[letter] = current
    return stages


def compile_plan(candidate: PlannerCandidate, *, ctx: CompileContext) -> CompiledPlan:
    """Compile a candidate into frozen contracts, or raise CompilerError with every problem."""
    result = run_passes(candidate, ctx=ctx)["E"]
    assert isinstance(result, CompiledPlan)
    return result
