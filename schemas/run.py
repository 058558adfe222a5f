"""Inputs and results of the run workflow and its activities (one payload in, one out)."""

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, model_validator

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel, PlainData
from schemas.budget import BudgetLimits, BudgetState, StepProjection, Usage
from schemas.compiled import GateSpec
from schemas.error_codes import ErrorCode, recorded_code
from schemas.events import Actor, EventDraft
from schemas.plan import Scalar
from schemas.recipes import EffortPolicy, LoopSpec, TrailEntry
from schemas.run_source import (
    LEGACY_SOURCE_FIELDS,
    ReusableStep,
    RunSource,
    source_of_legacy,
)
from schemas.scope import RunScoped, Scope, Scoped

StepStatus = Literal["pending", "awaiting_approval", "in_progress", "done", "error", "skipped"]
GateStatus = Literal["dormant", "pending", "approved", "rejected", "changes_requested"]
Decision = Literal["approve", "reject", "request_changes"]
RunStatus = Literal["compiling", "running", "budget_exhausted", "completed", "failed", "cancelled"]

# A code read back from a recorded failure (StepError.failure_class): workflow state carried in
# histories may hold a type no catalogue entry has (an exception class a bug let through); it
# reads as ERROR instead of failing the replay.
RecordedCode = Annotated[ErrorCode, BeforeValidator(recorded_code)]


class StepNode(FrozenModel):
    """What the workflow needs to schedule one step; the contract itself stays in the store."""

    step_key: str
    step_id: str
    depends_on: list[str]
    contract_hash: str
    kind: str
    backend: str
    read_paths: list[str]
    write_paths: list[str]
    max_attempts: int = Field(ge=1)
    timeout_s: int = Field(ge=1)
    gate_id: str | None = None
    projected: StepProjection = StepProjection()
    tool_budget: int = Field(default=0, ge=0)
    source_recipe: str | None = Field(default=None, description="owner/slug: the step's badge")
    loop: LoopSpec | None = None
    uses_recipe: str | None = None
    model_provider: str | None = Field(
        default=None,
        description="a model step's provider: only a worker serving it takes the step "
        "(schemas/names.model_queue); None for code steps and for runs compiled before it",
    )
    replay: list[ArtifactRef] = Field(
        default_factory=list,
        description="a sealed capsule step: the programs it runs, in order, instead of asking "
        "a model for code",
    )


class DecideGateInput(FrozenModel):
    """A person's decision on a gate (update `decide_gate`, or the signal of the same name)."""

    gate_id: str
    decision: Decision
    actor: Actor
    reason: str = Field(min_length=1)
    contract_hash: str
    not_after: datetime | None = Field(
        default=None,
        description="the sender stopped waiting then: a run that takes the decision later "
        "refuses it, so a sender told that no worker took it knows that nothing was decided",
    )


class GateDecision(FrozenModel):
    gate_id: str
    decision: Decision
    actor: Actor
    reason: str
    contract_hash: str
    decided_at: datetime


class GateState(FrozenModel):
    spec: GateSpec
    status: GateStatus = "dormant"
    approver_role: str
    requested_at: datetime | None = None
    escalated: bool = False
    reminders: int = 0
    decision: GateDecision | None = None


class StepError(FrozenModel):
    failure_class: RecordedCode
    message: str


class StepState(FrozenModel):
    step_key: str
    status: StepStatus = "pending"
    attempts: int = 0
    started_at: datetime | None = None
    finished_at: datetime | None = None
    error: StepError | None = None
    skipped_because: str | None = None
    outputs: list[ArtifactRef] = Field(default_factory=list)
    receipt: dict[str, PlainData] = Field(default_factory=dict)
    usage: Usage = Usage()
    iterations: int = Field(default=0, ge=0, description="loop steps: iterations run")
    note: str | None = Field(default=None, description="the step's last done-note")


RUN_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$"


class RunInput(Scoped):
    """Start a compiled run: where its plan comes from, its input files (by reference), options.

    The source says how the run starts (a plan, an objective, a capsule, a resume, a child run);
    `carry` is the state a continued generation starts from. Payloads written before sources
    (the seven source fields flat on the input) decode into the source they meant.
    """

    # Run ids name directories and streams: plain names only.
    run_id: str = Field(pattern=RUN_ID_PATTERN)
    source: RunSource
    inputs: dict[str, ArtifactRef] = Field(default_factory=dict)
    params: dict[str, Scalar] = Field(
        default_factory=dict, description="scalar parameter values (ParameterDecl), checked"
    )
    profile_ref: str | None = None
    profile_document: dict[str, PlainData] | None = None
    model_wait_s: int = Field(
        default=600,
        ge=1,
        description="how long model work waits for a worker serving its provider before it "
        "fails EXECUTOR_UNAVAILABLE (a step) or PLANNER_UNAVAILABLE (the planner)",
    )
    scope: Scope = Field(
        default=Scope.default(), description="whose run: built once at submission, passed down"
    )
    history_threshold: int | None = Field(default=None, ge=50)
    budget: BudgetLimits | None = Field(
        default=None, description="caps for this run only; otherwise the profile's"
    )
    quota_tokens: int | None = Field(
        default=None,
        ge=1,
        description="set at admission: what the tenant's daily token quota had left when the "
        "run started; the run's max_tokens (its own or its profile's) is held to it",
    )
    carry: "RunCarry | None" = None

    @model_validator(mode="before")
    @classmethod
    def _read_flat_source(cls, data: Any) -> Any:
        """A payload from before sources carries them flat: read them as their source."""
        if not isinstance(data, dict) or "source" in data:
            return data
        data = dict(data)
        flat = {k: data.pop(k) for k in LEGACY_SOURCE_FIELDS if k in data}
        return {**data, "source": source_of_legacy(flat)}


class RunCarry(FrozenModel):
    """State carried across continue-as-new."""

    compiled_ref: ArtifactRef
    plan_hash: str
    nodes: list[StepNode]
    states: dict[str, StepState]
    max_parallel: int
    history_threshold: int
    root_event_id: str
    generation: int = Field(ge=1)
    gates: dict[str, GateState] = Field(default_factory=dict)
    budget: BudgetState = BudgetState()
    recipes: "RecipeView" = Field(default_factory=lambda: RecipeView())


class RecipeView(FrozenModel):
    """What the recipe substrate decided for a run: effort, the seeding recipe, the trail."""

    effort: EffortPolicy | None = None
    seeded_by: str | None = None
    trail: list[TrailEntry] = Field(default_factory=list, description="the latest entries")
    recorded: int = Field(default=0, ge=0, description="trail entries recorded as events")


class RunResult(Scoped):
    run_id: str
    scope: Scope = Field(
        default=Scope.default(), description="the run's scope: whose store its outputs are in"
    )
    status: RunStatus
    plan_hash: str | None = None
    steps: dict[str, StepState] = Field(default_factory=dict)
    outputs: list[ArtifactRef] = Field(default_factory=list)
    failed_steps: list[str] = Field(default_factory=list)
    skipped_steps: dict[str, str] = Field(default_factory=dict)
    gates: dict[str, GateState] = Field(default_factory=dict)
    generation: int = Field(default=1, ge=1, description="runs in the continue-as-new chain")
    error: str | None = None
    budget: BudgetState = BudgetState()
    recipes: RecipeView = RecipeView()
    badges: dict[str, str] = Field(
        default_factory=dict, description="step_key -> owner/slug of the recipe it came from"
    )


class RunStatusView(FrozenModel):
    """The `status` query: the plan with per-step state."""

    run_id: str
    status: RunStatus
    plan_hash: str | None
    generation: int
    steps: list[StepState]
    order: list[str]
    gates: list[GateState] = Field(default_factory=list)
    budget: BudgetState = BudgetState()
    recipes: RecipeView = RecipeView()
    badges: dict[str, str] = Field(
        default_factory=dict, description="step_key -> owner/slug of the recipe it came from"
    )


class CompileInput(RunScoped):
    run_id: str
    source_ref: ArtifactRef
    profile_ref: str | None = None
    profile_document: dict[str, Any] | None = None
    scope: Scope
    cause_event_id: str | None = Field(
        default=None, description="the run's root event: what model calls of Pass B/D hang on"
    )


class CompileResult(FrozenModel):
    output_ref: ArtifactRef
    usage: Usage = Field(default=Usage(), description="what Pass B/D's model calls spent")


class FreezeResult(FrozenModel):
    compiled_ref: ArtifactRef
    plan_hash: str
    nodes: list[StepNode]
    max_parallel: int
    history_threshold: int
    profile_id: str
    gates: list[GateSpec] = Field(default_factory=list)
    budget: BudgetLimits = BudgetLimits()
    usage: Usage = Usage()  # what Pass B/D's models spent (compile__passes; zero per pass)


class StepExecuteInput(RunScoped):
    run_id: str
    scope: Scope
    compiled_ref: ArtifactRef
    step_key: str
    inputs: dict[str, ArtifactRef] = Field(
        default_factory=dict, description="workspace path -> the artifact to materialize there"
    )
    cause_event_id: str
    iteration: int = Field(default=1, ge=1, description="loop steps: which pass this is")
    effort: EffortPolicy | None = Field(
        default=None, description="a recipe-seeded run: model tier and thinking budget to use"
    )
    budget_left: BudgetLimits | None = Field(
        default=None,
        description="what the run had left for this step when it started (caps minus recorded "
        "spend minus what steps in flight hold); the step's model and bridge calls stop there",
    )
    params: dict[str, Scalar] = Field(
        default_factory=dict, description="the run's scalar parameters (meta/params.json)"
    )
    replay: list[ArtifactRef] = Field(
        default_factory=list, description="a sealed capsule step: its programs, run in order"
    )


class StepExecuteResult(FrozenModel):
    step_key: str
    attempt: int
    outputs: list[ArtifactRef]
    preflight_ref: ArtifactRef | None = Field(default=None, description="None for a `uses:` step")
    postflight_ref: ArtifactRef | None = None
    receipt_summary: dict[str, PlainData]
    completed_event_id: str
    usage: Usage = Field(default=Usage(), description="recorded over every attempt of the step")
    iteration: int = 1
    note: str | None = Field(default=None, description="the done-note the step left in work/")


class StepUsageInput(RunScoped):
    run_id: str
    # Payloads from before it carry none: the step's ledger is read by its run id alone.
    scope: Scope = Scope.default()
    step_key: str


class ReuseInput(RunScoped):
    run_id: str
    scope: Scope
    resumed_from: str
    step: ReusableStep
    contract_hash: str
    inputs: dict[str, ArtifactRef]
    cause_event_id: str


class ReuseResult(FrozenModel):
    reused: bool
    reason: str
    outputs: list[ArtifactRef] = Field(default_factory=list)


class StreamBatch(FrozenModel):
    stream_id: str
    events: list[EventDraft]


class AppendEventsInput(FrozenModel):
    stream_id: str
    events: list[EventDraft]
    # Batches the workflow held back (a plan run's front end), appended first, atomically.
    earlier: list[StreamBatch] = Field(default_factory=list)


class AppendEventsResult(FrozenModel):
    event_ids: list[str]


class FinalizeInput(RunScoped):
    run_id: str
    # The workflow's clock, so a retried finalize writes the very same event.
    finished_at: datetime | None = None
    scope: Scope
    compiled_ref: ArtifactRef
    outputs: list[ArtifactRef]
    cause_event_id: str


class FinalizeResult(FrozenModel):
    published: list[ArtifactRef]
    problems: list[str]


RunCarry.model_rebuild()
RunInput.model_rebuild()


class PlanInput(RunScoped):
    """compile__plan (Pass A with a model): the objective, the run's inputs, the recipes' hints."""

    run_id: str
    scope: Scope
    objective: str
    inputs: dict[str, ArtifactRef] = Field(
        default_factory=dict, description="run input name -> the uploaded file"
    )
    hints: list[str] = Field(default_factory=list, description="recipes that matched weakly")
    profile_ref: str | None = None
    profile_document: dict[str, Any] | None = None
    cause_event_id: str | None = None
    params: dict[str, Scalar] = Field(
        default_factory=dict,
        description="the run's --param values as given: the planner declares each of them",
    )


class PlanResult(FrozenModel):
    candidate_ref: ArtifactRef
    mission: str
    steps: int
    repairs: int = Field(ge=0, description="repair calls it took to get a compiling plan")
    usage: Usage = Field(default=Usage(), description="every planner and repair call, recorded")
