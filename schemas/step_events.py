"""Payloads of the events in a step's stream that have no home in another schema module.

tool.called.v1 and model.called.v1 (schemas.budget), the bridge's tool.refused.v1,
tool.replayed.v1 and log.noted.v1 (schemas.bridge) and recipe.trail.v1 (schemas.recipes) keep
their models where their subsystems define them; schemas.event_catalogue names them all.
"""

from pydantic import Field

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel, PlainData
from schemas.evaluator import EvaluationProof

# A receipt summary, per path: exists, size_bytes, sha256, ok, error, placeholders[, rows].
ReceiptSummary = dict[str, dict[str, PlainData]]


class _StepPayload(FrozenModel):
    """What every event of a step's own attempt carries: the step, the pass of its loop."""

    step_key: str
    iteration: int = Field(default=1, ge=1, description="the loop pass (set only after the 1st)")


class StepEffort(FrozenModel):
    """The effort levers an attempt ran with (a recipe-seeded run)."""

    tier: str
    model_tier: str
    thinking_budget_tokens: int = Field(ge=0)


class StepStarted(_StepPayload):
    """Payload of step.started.v1: one attempt began."""

    attempt: int = Field(ge=1)
    contract_hash: str
    step_id: str
    effort: StepEffort | None = None


class StepReceipt(_StepPayload):
    """Payload of step.receipt.preflight.v1 and step.receipt.postflight.v1."""

    attempt: int = Field(ge=1)
    receipt_ref: ArtifactRef
    files: ReceiptSummary = Field(default_factory=dict)


class StepCompleted(_StepPayload):
    """Payload of step.completed.v1: the attempt's verified outputs (published with it)."""

    attempt: int = Field(ge=1)
    outputs: list[ArtifactRef]
    preflight_ref: ArtifactRef
    postflight_ref: ArtifactRef
    receipt: ReceiptSummary = Field(default_factory=dict)
    note: str | None = None
    code_ref: ArtifactRef | None = Field(default=None, description="model-written code")
    params_read: list[str] = Field(
        default_factory=list, description="scalar parameters the step's code read"
    )


class StepFailed(_StepPayload):
    """Payload of step.failed.v1: why the attempt failed and whether Temporal may retry it."""

    attempt: int = Field(ge=1)
    failure_class: str
    message: str
    retryable: bool


class StepReused(FrozenModel):
    """Payload of step.reused.v1: a resumed run adopted the step's verified outputs."""

    step_key: str
    from_run: str | None = None
    contract_hash: str
    outputs: list[ArtifactRef] = Field(default_factory=list)


class StepSkipped(FrozenModel):
    """Payload of step.skipped.v1: the step never ran (a dependency failed, the run stopped)."""

    step_key: str
    reason: str


class StepIteration(FrozenModel):
    """Payload of step.iteration.v1: one pass of a loop finished; `stopped` ends the loop."""

    step_key: str
    iteration: int = Field(ge=1, description="the pass that finished")
    mode: str
    max: int = Field(ge=1)
    note: str | None = None
    stopped: str | None = None


class ArtifactPublished(_StepPayload):
    """Payload of artifact.published.v1: one output published, with its path's version."""

    artifact: ArtifactRef
    version: int = Field(ge=1)
    contract_hash: str


class ModelFailed(FrozenModel):
    """Payload of model.failed.v1: one provider call that failed (not usage)."""

    failure_class: str
    retryable: bool
    message: str
    model: str
    consumer: str | None = None
    call_key: str
    step_key: str | None = None
    attempt: int = Field(default=1, ge=1)
    iteration: int = Field(default=1, ge=1)
    prompt_hash: str


class EvaluationProofRecorded(EvaluationProof):
    """Payload of evaluation.proof.v1: the proof, where it was judged and where it is stored."""

    step_key: str | None = None
    attempt: int = Field(default=1, ge=1)
    iteration: int = Field(default=1, ge=1)
    proof_ref: ArtifactRef
