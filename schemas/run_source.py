"""Where a run's plan comes from: one tagged source per way a run starts.

A run starts from a plan, an objective (matched to a recipe, or planned by the planner model),
a capsule version, an earlier run it resumes, or a parent run's `uses:` step (a child run). Each
source carries what that case needs and nothing else; `RunInput.source` holds one of them.

Runs started before the sources existed carried these fields flat on RunInput (`plan_ref`,
`objective`, `capsule`, `resumed_from`, `reusable`, `recipe_chain`, `planner_provider`):
`source_of_legacy` reads that shape, so every recorded history and every continued run still
decodes.
"""

from typing import Annotated, Any, Literal

from pydantic import Field, field_validator

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.bounds import OBJECTIVE_MAX
from schemas.capsule import CapsuleRunSpec

__all__ = [
    "LEGACY_SOURCE_FIELDS",
    "CapsuleSource",
    "ChildSource",
    "ObjectiveSource",
    "PlanSource",
    "ResumeSource",
    "ReusableStep",
    "RunSource",
    "source_of_legacy",
]


class ReusableStep(FrozenModel):
    """A step an earlier run completed; reused only if its contract and inputs are unchanged."""

    step_key: str
    contract_hash: str
    input_hashes: dict[str, str]
    outputs: list[ArtifactRef]


class PlanSource(FrozenModel):
    """A plan given at submission (`forge run PLAN.json`, `POST /v1/runs` with a plan)."""

    kind: Literal["plan"] = "plan"
    plan_ref: ArtifactRef
    objective: str | None = Field(
        default=None,
        max_length=OBJECTIVE_MAX,
        description="what the plan was made for, if known: recorded, matched for the trail only",
    )


class ObjectiveSource(FrozenModel):
    """An objective: a recipe's plan when one matches clearly, else the planner model's."""

    kind: Literal["objective"] = "objective"
    objective: str = Field(max_length=OBJECTIVE_MAX)
    planner_provider: str | None = Field(
        default=None,
        description="the planner model's provider: only a worker serving it plans the run "
        "(schemas/names.model_queue); None plans on the run's queue",
    )

    @field_validator("objective")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError(
                "a run needs a plan (plan_ref), a capsule or an objective to match a recipe to"
            )
        return value


class CapsuleSource(FrozenModel):
    """A capsule version's sealed plan, run on new inputs with its parameters."""

    kind: Literal["capsule"] = "capsule"
    capsule: CapsuleRunSpec


class ResumeSource(FrozenModel):
    """An earlier run's plan again, adopting the verified outputs of the steps it may reuse."""

    kind: Literal["resume"] = "resume"
    plan_ref: ArtifactRef
    resumed_from: str
    reusable: list[ReusableStep] = Field(default_factory=list)
    objective: str | None = Field(default=None, max_length=OBJECTIVE_MAX)


class ChildSource(FrozenModel):
    """A `uses:` step's sub-recipe, run as a child of the step's run."""

    kind: Literal["child"] = "child"
    plan_ref: ArtifactRef
    recipe_chain: list[str] = Field(description="the recipes on the call stack, outermost first")


RunSource = Annotated[
    PlanSource | ObjectiveSource | CapsuleSource | ResumeSource | ChildSource,
    Field(discriminator="kind"),
]

LEGACY_SOURCE_FIELDS = (
    "plan_ref",
    "objective",
    "capsule",
    "resumed_from",
    "reusable",
    "recipe_chain",
    "planner_provider",
)


def source_of_legacy(flat: dict[str, Any]) -> dict[str, Any]:
    """The tagged source of a RunInput written flat (before sources), as plain data.

    A capsule wins, then a resume, then a child run, then a plan; with none of them the run
    started from its objective. Fields a case never used are dropped (they were empty).
    """
    given = {k: v for k, v in flat.items() if v not in (None, [], "")}

    def picked(kind: str, *keys: str) -> dict[str, Any]:
        return {"kind": kind, **{k: given[k] for k in keys if k in given}}

    if "capsule" in given:
        return picked("capsule", "capsule")
    if "resumed_from" in given:
        return picked("resume", "plan_ref", "resumed_from", "reusable", "objective")
    if "recipe_chain" in given:
        return picked("child", "plan_ref", "recipe_chain")
    if "plan_ref" in given:
        return picked("plan", "plan_ref", "objective")
    return {"objective": "", **picked("objective", "objective", "planner_provider")}
