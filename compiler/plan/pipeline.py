"""The order of the passes, in one place; Pass A's candidate goes in, a CompiledPlan comes out."""

from collections.abc import Callable
from typing import Any

from compiler.plan.context import CompileContext
from compiler.plan.passes.contracts import contracts
from compiler.plan.passes.freeze import freeze
from compiler.plan.passes.resolve import resolve
from compiler.plan.passes.skills import skills
from schemas import names
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


# Runs started before compile__passes ran one activity per pass, in PASSES' order; the last one
# froze the plan. Their names are persisted in histories (schemas/names.py), not derived from
# the pass functions: renaming a pass function changes no stored name.
COMPILE_ACTIVITIES: tuple[str, ...] = (
    names.COMPILE_RESOLVE,
    names.COMPILE_CONTRACTS,
    names.COMPILE_SKILLS,
    names.COMPILE_FREEZE,
)
# The one activity that runs every pass in PASSES' order and freezes the plan (FreezeResult).
COMPILE_PASSES = names.COMPILE_PASSES


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
