"""Payloads of the run-level events the workflow and the front-end activities write.

A payload stores the fields its writer set (schemas.event_catalogue.payload_of); a field a writer
may leave out has a default, so a reader gets the same model either way. Fields are as the
current writers fill them; events stored before a field existed still read (defaults).
"""

from pydantic import Field

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel, PlainData
from schemas.budget import BudgetLimits, Usage
from schemas.capsule import CapsuleRunSpec
from schemas.compiled import GateSpec
from schemas.plan import Scalar
from schemas.run import Decision

# ---- the run --------------------------------------------------------------------------------


class RunStarted(FrozenModel):
    """Payload of run.started.v1: what the run was started with (root event)."""

    plan_ref: ArtifactRef | None = Field(default=None, description="None: an objective run")
    inputs: list[str] = Field(default_factory=list, description="the run's input paths")
    profile: str | None = Field(default=None, description="the profile ref it was started with")
    objective: str | None = None
    recipe_chain: list[str] = Field(default_factory=list, description="a sub-recipe's callers")
    capsule: CapsuleRunSpec | None = Field(
        default=None, description="a capsule run: the name, version and hash it runs"
    )
    params: dict[str, Scalar] = Field(default_factory=dict, description="scalar parameters")


class RunCompiled(FrozenModel):
    """Payload of run.compiled.v1: the frozen plan the run executes."""

    plan_hash: str
    profile_id: str
    steps: list[str] = Field(description="step keys in plan order")
    compiled_ref: ArtifactRef | None = Field(
        default=None, description="the compiled plan (forge.compiled/1) the run executes"
    )


class RunCost(FrozenModel):
    """The cost line run__finalize records (usage itself is in the step streams' ledgers)."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    usd: float = Field(default=0.0, ge=0)


class RunCompleted(FrozenModel):
    """Payload of run.completed.v1: run__finalize's record, or a trivial objective's end."""

    plan_hash: str | None = None
    problems: list[str] = Field(default_factory=list)
    outputs: list[ArtifactRef] = Field(default_factory=list)
    cost: RunCost | None = None
    steps: int | None = Field(default=None, ge=0, description="a trivial run: 0 steps")
    reason: str | None = Field(default=None, description="a trivial run: why no plan")


class RunFailed(FrozenModel):
    """Payload of run.failed.v1; which fields are set says where the run failed.

    Front end (`stage` plan, recipes, compile): `error` with the failure's `details` or the
    planner's `hints`. Steps: `failed_steps` and `skipped_steps` (step -> why). run__finalize:
    `plan_hash`, `problems`, `outputs`, `cost`.
    """

    stage: str | None = None
    error: str | None = None
    details: list[PlainData] = Field(default_factory=list)
    hints: list[str] = Field(default_factory=list)
    failed_steps: list[str] = Field(default_factory=list)
    skipped_steps: dict[str, str] = Field(default_factory=dict)
    plan_hash: str | None = None
    problems: list[str] = Field(default_factory=list)
    outputs: list[ArtifactRef] = Field(default_factory=list)
    cost: RunCost | None = None


class RunCancelled(FrozenModel):
    """Payload of run.cancelled.v1: the steps the cancellation stopped."""

    stopped_steps: list[str] = Field(default_factory=list)


class RunTagged(FrozenModel):
    """Payload of run.tagged.v1: `recipe:<owner>/<slug>` or `planner`, and the plan it made."""

    tags: list[str]
    plan_ref: ArtifactRef | None = None


# ---- the planner (compile__plan) ---------------------------------------------------------------


class PlanDrafted(FrozenModel):
    """Payload of plan.drafted.v1: the planner model's candidate, after its repairs."""

    candidate_ref: ArtifactRef
    mission: str
    steps: list[str]
    repairs: int = Field(ge=0)
    problems_repaired: list[list[str]] = Field(default_factory=list)
    model_call_id: str


class PlanRejected(FrozenModel):
    """Payload of plan.rejected.v1: why the planner's plan was still rejected after repairs."""

    reasons: list[str]


# ---- gates -------------------------------------------------------------------------------------


class GateRequested(FrozenModel):
    """Payload of gate.requested.v1: a gate opened; its spec names approver and deadline."""

    gate_id: str
    gate: GateSpec


class GateDecided(FrozenModel):
    """Payload of gate.decided.v1 (the actor is the event's)."""

    gate_id: str
    decision: Decision
    reason: str
    contract_hash: str
    gated_steps: list[str] = Field(default_factory=list)


class GateDecisionRefused(FrozenModel):
    """Payload of gate.decision_refused.v1: a decision recorded, never applied."""

    gate_id: str
    decision: Decision
    reason: str
    refused_because: str


class GateReminder(FrozenModel):
    """Payload of gate.reminder.v1: the gate still waits."""

    gate_id: str
    reminder: int = Field(ge=1)
    approver_role: str | None = None
    waiting_s: float = Field(ge=0)


class GateEscalated(FrozenModel):
    """Payload of gate.escalated.v1: the deadline passed and the gate went to another role."""

    gate_id: str
    from_role: str | None = None
    to_role: str


# ---- the budget --------------------------------------------------------------------------------


class BudgetExtended(FrozenModel):
    """Payload of budget.extended.v1: the caps after an accepted extension."""

    tokens: int
    cost_usd: float
    reason: str
    limits: BudgetLimits
    spent: Usage


class BudgetExtensionRefused(FrozenModel):
    """Payload of budget.extension_refused.v1: an extension recorded, never applied."""

    tokens: int
    cost_usd: float
    reason: str
    refused_because: str


class BudgetExhausted(FrozenModel):
    """Payload of budget.exhausted.v1: the run is blocked until an extension makes room."""

    reason: str
    refusals: dict[str, str] = Field(description="step key -> why its start was refused")
    limits: BudgetLimits
    spent: Usage
    resume_with: str = Field(description="the command that extends the budget")
