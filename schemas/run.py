"""Inputs and results of the run workflow and its activities (one payload in, one out)."""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.events import EventDraft

StepStatus = Literal["pending", "in_progress", "done", "error", "skipped"]
RunStatus = Literal["compiling", "running", "completed", "failed", "cancelled"]


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


class StepError(FrozenModel):
    failure_class: str
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
    receipt: dict[str, Any] = Field(default_factory=dict)


class RunInput(FrozenModel):
    """Start a compiled run: the plan (by reference) and the run's input files (by reference)."""

    run_id: str
    plan_ref: ArtifactRef
    inputs: dict[str, ArtifactRef] = Field(default_factory=dict)
    profile_ref: str | None = None
    profile_document: dict[str, Any] | None = None
    tenant_id: str = "default"
    project_id: str = "default"
    history_threshold: int | None = Field(default=None, ge=50)
    carry: "RunCarry | None" = None


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


class RunResult(FrozenModel):
    run_id: str
    status: RunStatus
    plan_hash: str | None = None
    steps: dict[str, StepState] = Field(default_factory=dict)
    outputs: list[ArtifactRef] = Field(default_factory=list)
    failed_steps: list[str] = Field(default_factory=list)
    skipped_steps: dict[str, str] = Field(default_factory=dict)
    generation: int = Field(default=1, ge=1, description="runs in the continue-as-new chain")
    error: str | None = None


class RunStatusView(FrozenModel):
    """The `status` query: the plan with per-step state."""

    run_id: str
    status: RunStatus
    plan_hash: str | None
    generation: int
    steps: list[StepState]
    order: list[str]


class CompileInput(FrozenModel):
    run_id: str
    source_ref: ArtifactRef
    profile_ref: str | None = None
    profile_document: dict[str, Any] | None = None


class CompileResult(FrozenModel):
    output_ref: ArtifactRef


class FreezeResult(FrozenModel):
    compiled_ref: ArtifactRef
    plan_hash: str
    nodes: list[StepNode]
    max_parallel: int
    history_threshold: int
    profile_id: str


class StepExecuteInput(FrozenModel):
    run_id: str
    tenant_id: str = "default"
    project_id: str = "default"
    compiled_ref: ArtifactRef
    step_key: str
    inputs: dict[str, ArtifactRef] = Field(
        default_factory=dict, description="workspace path -> the artifact to materialize there"
    )
    cause_event_id: str


class StepExecuteResult(FrozenModel):
    step_key: str
    attempt: int
    outputs: list[ArtifactRef]
    preflight_ref: ArtifactRef
    postflight_ref: ArtifactRef
    receipt_summary: dict[str, Any]
    completed_event_id: str


class AppendEventsInput(FrozenModel):
    stream_id: str
    events: list[EventDraft]


class AppendEventsResult(FrozenModel):
    event_ids: list[str]


class FinalizeInput(FrozenModel):
    run_id: str
    tenant_id: str = "default"
    project_id: str = "default"
    compiled_ref: ArtifactRef
    outputs: list[ArtifactRef]
    cause_event_id: str


class FinalizeResult(FrozenModel):
    published: list[ArtifactRef]
    problems: list[str]


RunInput.model_rebuild()
