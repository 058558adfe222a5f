"""Type-system models (seed 000 Part IV): kinds, slots, profiles, packs, policies, adapters."""

from typing import Any, Literal

from pydantic import Field

from schemas.base import FrozenModel

ArtifactFormat = Literal[
    "json",
    "csv",
    "tsv",
    "parquet",
    "html",
    "md",
    "txt",
    "pdf",
    "yaml",
    "zip",
    "diff",
    "binary",
    "other",
]
ParseValidator = Literal[
    "json",
    "json_rows",
    "csv",
    "tsv",
    "yaml",
    "html",
    "markdown",
    "pdf",
    "text",
    "zip",
    "parquet",
    "unified_diff",
    "binary",
]
TopLevelType = Literal["array", "object", "table"]


class ArtifactKind(FrozenModel):
    """A representation format: `<family>.<representation>[.<subtype>]` (seed 000 §4.4)."""

    kind_key: str
    family: str
    representation: str
    subtype: str | None = None
    format: ArtifactFormat
    media_type: str
    extensions: list[str] = Field(min_length=1)
    parse_validator: ParseValidator
    top_level_type: TopLevelType | None = None
    description: str


class CrossStepSlot(FrozenModel):
    """A semantic role for data flowing between steps (seed 000 §4.4)."""

    slot_id: str
    description: str
    default_kind_keys: list[str] = Field(min_length=1)
    grain: str


class ArtifactProfile(FrozenModel):
    """A canonical contract profile: `<scope>.<kind_key>.<semantic_name>.v<major>`."""

    profile_id: str
    entity_schema_id: str
    kind_key: str
    grain: str
    description: str = ""


class EntityRule(FrozenModel):
    """A domain validator (ladder L5): a JsonLogic rule every instance must satisfy."""

    rule_id: str = Field(min_length=1)
    logic: Any
    message: str = Field(min_length=1)
    severity: Literal["error", "warning"] = "error"
    path: str = Field(default="", description="the JSON Pointer the finding is reported at")
    requires: list[str] = Field(
        default_factory=list, description="fields; the rule is skipped when one is missing"
    )


class EntitySchema(FrozenModel):
    """The semantic meaning of data within a domain, as a real JSON Schema."""

    entity_schema_id: str
    title: str
    description: str
    key_fields: list[str] = Field(default_factory=list)
    json_schema: dict[str, Any]
    rules: list[EntityRule] = Field(default_factory=list)


class DisambiguationRule(FrozenModel):
    """A routing boundary: when any term appears, prefer one pack over others."""

    text: str
    prefer: str
    over: list[str] = Field(min_length=1)
    when_any: list[str] = Field(min_length=1)


class DomainPack(FrozenModel):
    """A standard library for a business domain (seed 000 §4.2)."""

    domain_pack_id: str
    title: str
    purpose: str
    entity_schemas: list[EntitySchema] = Field(min_length=1)
    canonical_profiles: list[ArtifactProfile] = Field(default_factory=list)
    triggers: list[str] = Field(min_length=1)
    example_goals: list[str] = Field(min_length=1)
    disambiguation: list[DisambiguationRule] = Field(default_factory=list)
    synonyms: dict[str, str] = Field(default_factory=dict)
    default_policy_profile_id: str


class TypicalSlots(FrozenModel):
    inputs: list[str] = Field(default_factory=list)
    outputs: list[str] = Field(default_factory=list)


class WorkflowPack(FrozenModel):
    """Operational semantics for a class of transformation (seed 000 §4.3)."""

    workflow_pack_id: str
    title: str
    purpose: str
    typical_slots: TypicalSlots
    triggers: list[str] = Field(min_length=1)
    example_goals: list[str] = Field(min_length=1)
    disambiguation: list[DisambiguationRule] = Field(default_factory=list)
    min_input_sources: int = Field(default=0, ge=0)
    side_effecting: bool = False


FailureClass = Literal[
    "SANDBOX_SESSION_DEAD",
    "SANDBOX_TRANSPORT_5XX",
    "READINESS_PROBE",
    "STALE_CONTINUATION",
    "SANDBOX_OOM",
    "SANDBOX_TIMEOUT",
    "OUTPUT_SHAPE",
    "CODE_ERROR",
    "POLICY_BLOCKED",
    "MISSING_INPUT",
    "CONTRACT_VIOLATION",
    "MAX_RETRIES_REACHED",
    "BUDGET_EXHAUSTED",
    "LEDGER_CORRUPT",
]


class RepairPolicy(FrozenModel):
    """How a failed attempt is retried under the same contract (seed 000 §6.5)."""

    strategy: Literal["retry_same_contract", "fail_fast"]
    max_retries: int = Field(ge=0, le=25)
    retryable_failure_classes: list[FailureClass]
    immutable_output_bindings: bool = True


class PolicyProfile(FrozenModel):
    """How strictly the compiler and runtime enforce contracts (seed 000 §4.5)."""

    policy_profile_id: str
    title: str
    description: str
    triggers: list[str] = Field(default_factory=list)
    allow_adapters: bool
    allow_generic_inference: bool
    implicit_normalization: bool
    require_required_inputs: bool = True
    mismatch_action: Literal["block", "warn"] = "block"
    provenance: Literal["none", "preferred", "required"] = "none"
    require_human_review_for_side_effects: bool = False
    validators: list[str] = Field(min_length=1)
    repair: RepairPolicy


class Adapter(FrozenModel):
    """An explicit representation change the compiler may insert (same entity, new kind)."""

    adapter_id: str
    from_kind: str
    to_kind: str
    description: str
    module: str
    lossless: bool = True
    # Filled by the loader from the module's source, so a changed adapter changes every
    # contract that inserts it.
    code_sha256: str | None = None
