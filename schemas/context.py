"""The context pack compiler's language (seed 002): what enters each of its 8 stages, what leaves.

A ContextPack (stdlib/context/<consumer>.yaml) declares, for one model consumer, the intents it
serves, its prompt blocks, policy bundles (JsonLogic rules over the run's facts), tool registry
and permissions, budget split, memory policy and redaction rules. A RunContext says who is
running and under what safety mode and pinned snapshot; an InvokeRequest carries the task. The
compiler turns the three into a CompiledContext: the prompts the model sees, the manifests of
everything that went into them, the runtime controls, and a hash per stage.
"""

from typing import Any, Literal

from pydantic import ConfigDict, Field

from schemas.base import FrozenModel
from schemas.models import Consumer

ApprovalMode = Literal["auto", "notify", "confirm", "human"]
# Higher rank = more human involvement before a call. A run surfaces only tools whose effective
# mode ranks at or below its safety_mode (an unattended run with safety_mode "auto" sees only
# tools that need nobody).
APPROVAL_RANK: dict[str, int] = {"auto": 0, "notify": 1, "confirm": 2, "human": 3}

Bucket = Literal["system", "developer", "task", "policy", "tools", "evidence", "memory", "session"]
BUCKETS: tuple[Bucket, ...] = (
    "system",
    "developer",
    "task",
    "policy",
    "tools",
    "evidence",
    "memory",
    "session",
)
STAGES: tuple[str, ...] = (
    "intent",
    "policy",
    "tools",
    "evidence",
    "memory",
    "budget",
    "buckets",
    "manifests",
)
Classification = Literal["PUBLIC", "INTERNAL", "CONFIDENTIAL", "PII", "SECRET"]
MemoryTier = Literal["working", "episodic", "semantic", "durable"]
Verdict = Literal["allow", "deny", "require"]
WithheldKind = Literal["tool", "evidence", "memory"]


class _AliasedModel(FrozenModel):
    """Frozen and strict; `if_`/`class_` read either name and write the alias `if`/`class`."""

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        validate_by_name=True,
        validate_by_alias=True,
        serialize_by_alias=True,
    )


# ---------------------------------------------------------------- the pack


class IntentRow(FrozenModel):
    """One row of the pack's intent-task catalog; also the intent stage's output."""

    intent_id: str = Field(min_length=1, description="e.g. forge.execute")
    intent_class: str = Field(min_length=1, description="e.g. code_act, judgement")
    task_id: str = Field(min_length=1)
    consumer: Consumer


class Block(FrozenModel):
    """A piece of prompt text; buckets pack blocks by priority (higher first)."""

    kind: str = Field(min_length=1)
    text: str
    priority: int = 50


class PolicyThen(FrozenModel):
    """What a rule does when its condition holds."""

    allow: bool = True
    requires: list[str] = Field(
        default_factory=list, description="obligations, e.g. approval, evaluator_review"
    )
    forbids: list[str] = Field(default_factory=list, description="tool ids withheld")
    downgrade: dict[str, ApprovalMode] = Field(
        default_factory=dict,
        description="tool id -> the approval mode the tool is surfaced with (the seed's "
        "downgrade_to); when several fired rules name one tool, the strictest mode wins",
    )


class PolicyRule(_AliasedModel):
    rule_id: str = Field(min_length=1)
    if_: Any = Field(alias="if", description="a JsonLogic condition over the policy context")
    then: PolicyThen = PolicyThen()
    applies_to_intent: str | None = None
    rationale: str = ""


class PolicyBundle(FrozenModel):
    bundle_id: str = Field(min_length=1)
    priority: int = 0
    rules: list[PolicyRule] = Field(default_factory=list)


class ToolEntry(FrozenModel):
    """A tool in the pack's registry, with the approval mode its manifest declares."""

    tool_id: str = Field(min_length=1)
    description: str
    approval_mode: ApprovalMode
    input_schema: dict[str, Any] = Field(default_factory=dict)
    native_name: str | None = Field(
        default=None,
        pattern=r"^[a-zA-Z0-9_-]{1,64}$",
        description="set: offered to the model as a tool under this provider-safe name; "
        "unset: reached only from sandboxed code through forge_bridge.call(tool_id, args)",
    )


class Permission(FrozenModel):
    tool_id: str = Field(min_length=1)
    allow: bool = True


class BudgetSpec(FrozenModel):
    default_total: int = Field(default=8000, ge=0, description="tokens, when the run names none")
    splits: dict[str, dict[Bucket, float]] = Field(
        default_factory=dict,
        description="intent id -> bucket -> fraction; fractions sum to 1 (buckets left out get 0)",
    )


class EvidencePolicy(FrozenModel):
    classifications: list[Classification] | None = Field(
        default=None, description="classifications this pack may show; None = all"
    )


class MemoryPolicy(FrozenModel):
    max_per_intent: int = Field(default=8, ge=0)
    classifications: list[Classification] | None = Field(
        default=None, description="classifications this pack may recall; None = all"
    )


class ContextPack(FrozenModel):
    """Everything one model consumer's compiles are made of (seed 002 Context Pack)."""

    contract_name: str = Field(min_length=1)
    contract_version: str = Field(min_length=1)
    consumer: Consumer
    description: str = ""
    intents: list[IntentRow] = Field(min_length=1)
    system_blocks: list[Block] = Field(default_factory=list)
    developer_blocks: list[Block] = Field(default_factory=list)
    policy_bundles: list[PolicyBundle] = Field(default_factory=list)
    tools: list[ToolEntry] = Field(default_factory=list)
    permissions: list[Permission] = Field(default_factory=list)
    budget: BudgetSpec = BudgetSpec()
    evidence: EvidencePolicy = EvidencePolicy()
    memory: MemoryPolicy = MemoryPolicy()
    redaction_rules: list[str] = Field(
        default_factory=list,
        description="regexes; matches in evidence, memory and session "
        "text are replaced by [REDACTED] before packing",
    )


# ---------------------------------------------------------------- the run and the request


class RunContext(FrozenModel):
    tenant_id: str = Field(min_length=1)
    project_id: str = Field(min_length=1)
    run_id: str | None = None
    user_id: str | None = None
    safety_mode: ApprovalMode
    prohibitions: list[str] = Field(default_factory=list, description="tool ids withheld")
    snapshot_id: str = Field(min_length=1, description="the run's pinned library snapshot hash")
    bucket_tokens: int | None = Field(default=None, ge=0, description="overrides the pack's total")
    facts: dict[str, Any] = Field(
        default_factory=dict,
        description="what policy rules see as `facts`, e.g. backend, effort, step_kind, network",
    )


class InvokeRequest(FrozenModel):
    intent_id: str = Field(min_length=1)
    message: str = Field(description="the task text")
    sections: list[Block] = Field(
        default_factory=list, description="extra structured task blocks, e.g. the dispatch packet"
    )
    context_query: dict[str, Any] = Field(default_factory=dict)
    session: list[Block] = Field(default_factory=list, description="recent turns")


class EvidenceQuery(FrozenModel):
    """What the compiler asks an injected evidence retriever."""

    intent_id: str
    query: dict[str, Any]
    tenant_id: str
    snapshot_id: str


class EvidenceRef(_AliasedModel):
    """One piece of evidence, pinned to a content-addressed snapshot."""

    id: str = Field(min_length=1)
    class_: str = Field(alias="class", min_length=1)
    classification: Classification
    payload_hash: str = Field(min_length=1, description="sha256 of the payload at snapshot time")
    snapshot_id: str = Field(min_length=1)
    summary: str
    priority: int = 50


class MemoryQuery(FrozenModel):
    """What the compiler asks an injected memory recaller."""

    intent_id: str
    tenant_id: str
    user_id: str | None


class PromotedMemory(FrozenModel):
    """A recall that went through capture -> review -> promote; raw capture never reaches here."""

    id: str = Field(min_length=1)
    tenant_id: str = Field(min_length=1)
    user_id: str | None = Field(default=None, description="the subject; None = tenant-wide")
    intent_id: str = Field(min_length=1)
    tier: MemoryTier
    text: str
    promoted_at: str
    classification: Classification


# ---------------------------------------------------------------- stage outputs


class PolicyDecision(FrozenModel):
    policy_decision_id: str = Field(description="pol_<12 hex> of the bundle and rule ids")
    rule_id: str
    bundle_id: str
    verdict: Verdict
    requires: list[str]
    forbids: list[str]
    downgrade: dict[str, ApprovalMode]
    rationale: str


class PolicyResolution(FrozenModel):
    decisions: list[PolicyDecision]


class Withheld(FrozenModel):
    """Something a stage did not pass on, and why: nothing disappears without a trace."""

    kind: WithheldKind
    id: str
    reason: str


class SurfacedTool(FrozenModel):
    tool_id: str
    description: str
    approval_mode: ApprovalMode = Field(description="effective: declared, or set by policy")
    declared_mode: ApprovalMode
    input_schema: dict[str, Any]
    native_name: str | None


class ToolSurface(FrozenModel):
    tools: list[SurfacedTool]
    withheld: list[Withheld]


class EvidenceSet(FrozenModel):
    refs: list[EvidenceRef]
    withheld: list[Withheld]


class MemorySet(FrozenModel):
    recalls: list[PromotedMemory]
    withheld: list[Withheld]


class BudgetAllocation(FrozenModel):
    total_tokens: int
    per_bucket: dict[Bucket, int] = Field(description="sums exactly to total_tokens")
    split_source: Literal["pack", "default"]


class PackedBlock(FrozenModel):
    source: str = Field(description="where the block came from, e.g. evidence:<ref id>")
    kind: str
    text: str = Field(description="empty when truncated")
    priority: int
    tokens: int = Field(description="estimated tokens of the block's full text")
    truncated: bool = False


class BucketContent(FrozenModel):
    blocks: list[PackedBlock]
    used_tokens: int
    budget_tokens: int
    truncated: bool


class AssembledBuckets(FrozenModel):
    buckets: dict[Bucket, BucketContent]


# ---------------------------------------------------------------- the envelope


class PolicyManifestEntry(FrozenModel):
    policy_decision_id: str
    rule_id: str
    bundle_id: str
    verdict: Verdict
    requires: list[str]
    forbids: list[str]


class ToolManifestEntry(FrozenModel):
    tool_id: str
    approval_mode: ApprovalMode
    native_name: str | None


class EvidenceManifestEntry(_AliasedModel):
    id: str
    class_: str = Field(alias="class")
    classification: Classification
    payload_hash: str


class MemoryManifestEntry(FrozenModel):
    id: str
    tier: MemoryTier
    classification: Classification
    promoted_at: str


class Manifests(FrozenModel):
    snapshot_id: str = Field(description="the pinned snapshot every evidence ref belongs to")
    policy_manifest: list[PolicyManifestEntry]
    tool_manifest: list[ToolManifestEntry]
    evidence_manifest: list[EvidenceManifestEntry]
    memory_manifest: list[MemoryManifestEntry]
    withheld: list[Withheld] = Field(description="tools, evidence and memory not passed on")


class RuntimeControls(FrozenModel):
    must_refuse: list[str] = Field(description="rule ids whose verdict is deny")
    must_escalate: list[str] = Field(description="rule ids that require approval")
    obligations: list[str] = Field(description="every obligation fired rules require, sorted")
    approval_gates_active: list[str] = Field(
        description="surfaced tool ids whose effective mode is confirm or human"
    )
    redaction_rules_active: list[str]


class BudgetReport(FrozenModel):
    total_tokens: int
    allocations: dict[Bucket, int]
    used_at_compile: dict[Bucket, int]
    bucket_truncations: dict[Bucket, int] = Field(description="blocks truncated, per bucket")
    truncated_blocks: dict[Bucket, list[str]] = Field(description="their sources, per bucket")
    token_estimator: str = Field(
        description="how used_at_compile was counted; budgets are enforced on provider usage"
    )


class ContextBody(FrozenModel):
    """Everything the manifests stage emits; CompiledContext adds the hashes."""

    pack_version: str = Field(description="<contract_name>@<contract_version>")
    consumer: Consumer
    intent_id: str
    system_prompt: str
    task_prompt: str
    surfaced_tools: list[SurfacedTool]
    manifests: Manifests
    runtime_controls: RuntimeControls
    budget_report: BudgetReport


class CompiledContext(ContextBody):
    """The single thing a model call is built from; invisible to the model if not in here."""

    stage_hashes: dict[str, str] = Field(description="stage name -> sha256 of its output")
    context_hash: str = Field(description="sha256 of this envelope without context_hash")


# ---------------------------------------------------------------- a compile in progress


class ContextDraft(FrozenModel):
    """A compile in progress: its three inputs, then each stage's output as the stages fill it.

    Each of the eight stages takes a draft and returns a new one with its own field set, in
    STAGES order: intent, policy, tools, evidence, memory, budget, buckets, and `compiled` (the
    manifests stage's CompiledContext). A field is None until its stage has run.
    """

    pack: ContextPack
    run_context: RunContext
    request: InvokeRequest
    intent: IntentRow | None = None
    policy: PolicyResolution | None = None
    tools: ToolSurface | None = None
    evidence: EvidenceSet | None = None
    memory: MemorySet | None = None
    budget: BudgetAllocation | None = None
    buckets: AssembledBuckets | None = None
    compiled: CompiledContext | None = None
