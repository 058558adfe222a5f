"""Execution profiles (seed 000 Part IX) and their frozen per-run snapshot."""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel

PhaseMode = Literal["block", "report", "off"]
# The step backends a model runs (executor_by_backend binds their model); others are code.
MODEL_BACKENDS = ("sandbox.session", "evaluator")


class RuntimeOverrides(FrozenModel):
    temperature: float | None = Field(default=None, ge=0, le=2)
    max_tokens: int | None = Field(default=None, gt=0)
    timeout_ms: int | None = Field(default=None, gt=0)
    use_extended_thinking: bool | None = None
    thinking_budget_tokens: int | None = Field(default=None, gt=0)
    reasoning_effort: Literal["low", "medium", "high"] | None = None


class ConsumerBinding(FrozenModel):
    """Which model and prompt serve one consumer (planner, resolver, executor, ...)."""

    consumer_key: str
    model_binding_ref: str
    prompt_binding_ref: str | None = None
    runtime_overrides: RuntimeOverrides = RuntimeOverrides()


class PhaseMatcher(FrozenModel):
    artifact_path: str
    pack_ref: str


class ValidationPhase(FrozenModel):
    mode: PhaseMode
    pack_ref: str | None = None
    stages: list[str] = Field(default_factory=list)
    matchers: list[PhaseMatcher] = Field(default_factory=list)


class ValidationManifest(FrozenModel):
    """Validation strictness at the five pipeline phases (seed 000 §9.5)."""

    phases: dict[
        Literal["planner_candidate", "compiled_plan", "step_input", "step_output", "final_output"],
        ValidationPhase,
    ]


class PinnedSkill(FrozenModel):
    skill_id: str
    priority: Literal["required", "preferred"]
    scope: Literal["executor", "planner", "both"] = "executor"


class SkillPolicy(FrozenModel):
    pinned_skills: list[PinnedSkill] = Field(default_factory=list)
    denied_skills: list[str] = Field(default_factory=list)
    autoload_mode: Literal["profile_only", "discovery_only", "profile_plus_discovery"] = (
        "profile_plus_discovery"
    )


class Budgets(FrozenModel):
    max_steps: int = Field(gt=0)
    max_parallel_steps: int = Field(gt=0)
    tool_budget_per_step: int = Field(ge=0)
    bridge_calls_per_step: int = Field(ge=0)
    max_tokens_per_run: int | None = Field(default=None, gt=0)
    max_cost_usd_per_run: float | None = Field(default=None, gt=0)
    step_timeout_s: int = Field(gt=0)
    # Below ~50 a new generation could continue as new before settling any step.
    history_event_threshold: int = Field(default=10_000, ge=50)


HttpMethod = Literal["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"]


def _get_only() -> list[HttpMethod]:
    return ["GET"]


class EgressRule(FrozenModel):
    domain: str
    include_subdomains: bool = False
    path_prefix: str = "/"
    methods: list[HttpMethod] = Field(default_factory=_get_only)


class EgressPolicy(FrozenModel):
    allow: list[EgressRule] = Field(default_factory=list)


class HitlPolicy(FrozenModel):
    require_approval_for_side_effects: bool = False
    default_approver_role: str = "approver"
    reminder_interval_s: int | None = Field(default=None, gt=0)


class SandboxPolicy(FrozenModel):
    isolation: Literal["bwrap", "none"] = "bwrap"
    cpu_seconds: int = Field(gt=0)
    memory_mb: int = Field(gt=0)
    file_size_mb: int = Field(gt=0)
    max_processes: int = Field(gt=0)
    max_open_files: int = Field(gt=0)
    wall_clock_s: int = Field(gt=0)
    output_cap_bytes: int = Field(gt=0)


class ExecutionProfile(FrozenModel):
    """One envelope that governs how a run plans, executes and validates (seed 000 §9.2)."""

    profile_id: str
    version: int = Field(ge=1)
    title: str
    description: str
    default_policy_profile_id: str | None = None
    planner_phase_bindings: dict[str, ConsumerBinding]
    executor_by_backend: dict[str, ConsumerBinding]
    validation: ValidationManifest
    skill_policy: SkillPolicy = SkillPolicy()
    budgets: Budgets
    egress: EgressPolicy = EgressPolicy()
    hitl: HitlPolicy = HitlPolicy()
    sandbox: SandboxPolicy


ProfileScope = Literal["builtin", "workspace", "run"]


class ExecutionProfileSnapshot(FrozenModel):
    """The one profile a run resolved to, frozen with its own hash before the first call."""

    profile_id: str
    scope: ProfileScope
    profile: ExecutionProfile
    snapshot_hash: str
