"""What a run's source says, read the same way by the workflow and by the submission code."""

from schemas.artifacts import ArtifactRef
from schemas.run import RunInput
from schemas.run_events import RunStarted
from schemas.run_source import (
    CapsuleSource,
    ChildSource,
    ObjectiveSource,
    PlanSource,
    ResumeSource,
    RunSource,
)

__all__ = ["objective_of", "plan_ref_of", "recipe_chain_of", "run_started"]


def plan_ref_of(source: RunSource) -> ArtifactRef | None:
    """The plan the run starts with: None for an objective (not planned yet) or a capsule."""
    if isinstance(source, PlanSource | ResumeSource | ChildSource):
        return source.plan_ref
    return None


def objective_of(source: RunSource) -> str | None:
    """The objective the run was started for, if it was given one."""
    if isinstance(source, PlanSource | ObjectiveSource | ResumeSource):
        return source.objective
    return None


def recipe_chain_of(source: RunSource) -> list[str]:
    """The recipes on a child run's call stack, outermost first; empty for any other run."""
    return list(source.recipe_chain) if isinstance(source, ChildSource) else []


def run_started(inp: RunInput) -> RunStarted:
    """run.started.v1 of a run: objective, recipe chain, capsule and params only when given."""
    source = inp.source
    objective = objective_of(source)
    chain = recipe_chain_of(source)
    return RunStarted(
        plan_ref=plan_ref_of(source),
        inputs=sorted(inp.inputs),
        profile=inp.profile_ref,
        **({"objective": objective} if objective else {}),
        **({"recipe_chain": chain} if chain else {}),
        **({"capsule": source.capsule} if isinstance(source, CapsuleSource) else {}),
        **({"params": inp.params} if inp.params else {}),
    )
