"""The planner's output (Pass A, seed 000 §2.5/§5.2) and Pass B's annotations (§5.3)."""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel
from schemas.bounds import (
    LIST_MAX,
    MISSION_MAX,
    OBJECTIVE_MAX,
    STEPS_MAX,
    Code,
    Label,
    Name,
    Note,
    PathText,
    Prose,
)
from schemas.evaluator import EvaluationSpec
from schemas.recipes import LoopSpec
from schemas.typesystem import ArtifactFormat, ParseValidator, TopLevelType

PARAM_NAME_PATTERN = r"^[A-Za-z_][A-Za-z0-9_]{0,63}$"
ScalarType = Literal["string", "integer", "number", "boolean"]
Scalar = str | int | float | bool
StepKind = Literal["code", "evaluate", "gate", "adapter", "recipe"]
ResolutionStatus = Literal["resolved", "ambiguous", "unresolved", "pinned"]


class ExpectedOutput(FrozenModel):
    path: PathText
    role: Name = "primary"
    location: Literal["sandbox"] = "sandbox"


class AbstractInput(FrozenModel):
    """A slot the step consumes. `path`/`from_step` pin the producer; otherwise found by slot."""

    slot: Name
    required: bool = True
    entity_schema_id: Name | None = None
    accepted_kind_keys: list[Name] = Field(default_factory=list, max_length=LIST_MAX)
    provenance_policy: Literal["none", "preferred", "required"] = "none"
    path: PathText | None = None
    from_step: Name | None = None


class AbstractOutput(FrozenModel):
    """A slot the step produces; `path` names which expected output carries it."""

    slot: Name
    entity_schema_id: Name | None = None
    preferred_kind_keys: list[Name] = Field(default_factory=list, max_length=LIST_MAX)
    path: PathText | None = None
    profile_id: Name | None = None


class ArtifactContract(FrozenModel):
    """A schema requirement on one artifact; the planner sets format, Pass C fills the rest."""

    format: ArtifactFormat | None = None
    required_top_level_type: TopLevelType | None = None
    kind_key: Name | None = None
    media_type: Name | None = None
    parse_validator: ParseValidator | None = None
    entity_schema_id: Name | None = None
    profile_id: Name | None = None
    role: Name | None = None
    required_columns: list[Name] = Field(default_factory=list, max_length=LIST_MAX)


class SemanticHints(FrozenModel):
    domain_terms: list[Label] = Field(default_factory=list, max_length=LIST_MAX)
    workflow_terms: list[Label] = Field(default_factory=list, max_length=LIST_MAX)
    policy_terms: list[Label] = Field(default_factory=list, max_length=LIST_MAX)


class RunInputDecl(FrozenModel):
    """A file the run is started with, materialized under `input/`."""

    name: Name
    path: PathText
    entity_schema_id: Name | None = None
    kind_key: Name | None = None
    required: bool = True
    description: Note = ""


class ParameterDecl(FrozenModel):
    """A scalar parameter of the run; step code reads it with `forge_bridge.param(name)`.

    A run's value for it is given at start (`forge run --param NAME=VALUE`), else the default;
    the step runtime records which step read which parameter, and a capsule extracted from the
    run makes the parameters read into its own.
    """

    name: str = Field(pattern=PARAM_NAME_PATTERN)
    type: ScalarType = "string"
    default: Note | int | float | bool | None = None
    description: Note = ""


class ApprovalRequest(FrozenModel):
    """Who must approve a step before it runs, and what happens if nobody does."""

    approver_role: Name | None = None
    prompt: Prose = ""
    deadline_s: int | None = Field(default=None, gt=0)
    on_timeout: Literal["reject", "escalate"] = "reject"
    escalate_to_role: Name | None = None
    dedupe_key: Name | None = Field(
        default=None, description="steps with the same key share one gate, decided together"
    )


class PlannerStep(FrozenModel):
    """One abstract step: structure only, no paths frozen, no contract (seed 000 §5.2)."""

    # Step keys name workspace directories, events and activity ids: plain names only.
    step_key: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_-]{0,127}$")
    label: Label
    objective: str = Field(max_length=OBJECTIVE_MAX)
    depends_on: list[Name] = Field(default_factory=list, max_length=STEPS_MAX)
    input_file_paths: list[PathText] = Field(default_factory=list, max_length=LIST_MAX)
    expected_outputs: list[ExpectedOutput] = Field(default_factory=list, max_length=LIST_MAX)
    success_criteria: Prose = ""
    abstract_inputs: list[AbstractInput] = Field(default_factory=list, max_length=LIST_MAX)
    abstract_outputs: list[AbstractOutput] = Field(default_factory=list, max_length=LIST_MAX)
    artifact_contracts: dict[PathText, ArtifactContract] = Field(
        default_factory=dict, max_length=LIST_MAX
    )
    semantic_hints: SemanticHints = SemanticHints()
    kind: StepKind = "code"
    code: Code | None = None
    requires_approval: bool = False
    approval: ApprovalRequest | None = None
    # A recipe or capsule may pin what Pass B would otherwise resolve.
    domain_pack_ids: list[Name] | None = Field(default=None, max_length=LIST_MAX)
    workflow_pack_ids: list[Name] | None = Field(default=None, max_length=LIST_MAX)
    policy_profile_id: Name | None = None
    # Recipe directives (seed 004): repeat under a bound, call a sub-recipe, badge the source.
    loop: LoopSpec | None = None
    uses_recipe: Name | None = Field(
        default=None, description="kind recipe: the sub-recipe run as a child workflow"
    )
    source_recipe: Name | None = Field(
        default=None, description="owner/slug of the recipe this step came from (its badge)"
    )
    invoke_skill: Name | None = Field(
        default=None, description="a skill id: its procedure and output schema bind the step"
    )
    evaluation: EvaluationSpec | None = Field(
        default=None, description="kind evaluate: the bundle's source/derived inputs and rubric"
    )


class PlannerCandidate(FrozenModel):
    """Pass A's output: mission, run inputs and abstract steps."""

    schema_version: Literal["forge.plan/1"] = "forge.plan/1"
    mission: str = Field(max_length=MISSION_MAX)
    run_inputs: list[RunInputDecl] = Field(default_factory=list, max_length=LIST_MAX)
    parameters: list[ParameterDecl] = Field(
        default_factory=list,
        max_length=LIST_MAX,
        description="scalar parameters step code reads (not hashed)",
    )
    steps: list[PlannerStep] = Field(max_length=STEPS_MAX)


class StepResolution(FrozenModel):
    """What Pass B decides for one step."""

    domain_pack_ids: list[str]
    workflow_pack_ids: list[str]
    policy_profile_id: str
    resolution_status: ResolutionStatus
    confidence: float = Field(ge=0, le=1)
    reason: str
    warnings: list[str] = Field(default_factory=list)


class ResolvedStep(PlannerStep):
    """A step after Pass B: annotated with the type libraries that apply to it."""

    domain_pack_ids: list[str]
    workflow_pack_ids: list[str]
    policy_profile_id: str
    resolution_status: ResolutionStatus
    confidence: float = Field(ge=0, le=1)
    reason: str
    warnings: list[str] = Field(default_factory=list)


class ResolvedPlan(FrozenModel):
    schema_version: Literal["forge.plan/1"] = "forge.plan/1"
    mission: str
    run_inputs: list[RunInputDecl] = Field(default_factory=list)
    parameters: list[ParameterDecl] = Field(default_factory=list)
    steps: list[ResolvedStep]
