"""Stage 8: the CompiledContext: prompts, manifests, runtime controls, budget report, hashes.

The system prompt is the system, developer, policy and tools buckets; the task prompt is the
task, evidence, memory and session buckets; each non-empty bucket sits under its own heading,
and a bucket that lost blocks to its budget says how many.

Hashes. `stage_hashes[s]` is `sha256_of` (compiler/hashing.py: sha256 over RFC 8785 canonical
JSON, like every Forge hash) of stage s's output, as `model_dump(mode="json")`; for "manifests"
the output is the ContextBody this stage emits. A replay diff thus names the stage where drift
appeared. `context_hash` is `sha256_of` the envelope without its own hash: the body's members
and `stage_hashes`. The same inputs, live or replayed from their recorded JSON, give the same
hashes byte for byte (tests/compiler/context/test_replay.py); test_manifests.py recomputes
every hash from scratch with the `rfc8785` package.
"""

from compiler.context.draft import Retrievers, filled
from compiler.context.tokens import ESTIMATOR
from compiler.hashing import sha256_of
from schemas.context import (
    APPROVAL_RANK,
    BUCKETS,
    STAGES,
    AssembledBuckets,
    Bucket,
    BucketContent,
    BudgetAllocation,
    BudgetReport,
    CompiledContext,
    ContextBody,
    ContextDraft,
    ContextPack,
    EvidenceSet,
    Manifests,
    MemorySet,
    PolicyResolution,
    RuntimeControls,
    ToolSurface,
)

HEADINGS: dict[Bucket, str] = {
    "system": "## System",
    "developer": "## Instructions",
    "task": "## Task",
    "policy": "## Policy in force",
    "tools": "## Tools",
    "evidence": "## Evidence",
    "memory": "## Memory",
    "session": "## Recent turns",
}
SYSTEM_BUCKETS: tuple[Bucket, ...] = ("system", "developer", "policy", "tools")
TASK_BUCKETS: tuple[Bucket, ...] = ("task", "evidence", "memory", "session")
_LINE_BUCKETS = frozenset({"policy", "tools", "memory"})  # one short block per line
_GATED = APPROVAL_RANK["confirm"]


def render_bucket(name: Bucket, bucket: BucketContent) -> str | None:
    """One bucket under its heading, or None when it has nothing to show or report."""
    texts = [b.text for b in bucket.blocks if not b.truncated and b.text]
    omitted = sum(1 for b in bucket.blocks if b.truncated)
    if not texts and not omitted:
        return None
    parts = [HEADINGS[name], ("\n" if name in _LINE_BUCKETS else "\n\n").join(texts)]
    if omitted:
        parts.append(f"({omitted} more block(s) omitted to fit the token budget.)")
    return "\n\n".join(p for p in parts if p)


def _prompt(buckets: AssembledBuckets, names: tuple[Bucket, ...]) -> str:
    rendered = (render_bucket(n, buckets.buckets[n]) for n in names)
    return "\n\n".join(r for r in rendered if r is not None)


def _manifests(
    snapshot_id: str,
    policy: PolicyResolution,
    tools: ToolSurface,
    evidence: EvidenceSet,
    memory: MemorySet,
) -> Manifests:
    # Plain dicts validated in one call: hundreds of entries per compile, each a model.
    return Manifests.model_validate(
        {
            "snapshot_id": snapshot_id,
            "policy_manifest": [
                {
                    "policy_decision_id": d.policy_decision_id,
                    "rule_id": d.rule_id,
                    "bundle_id": d.bundle_id,
                    "verdict": d.verdict,
                    "requires": d.requires,
                    "forbids": d.forbids,
                }
                for d in policy.decisions
            ],
            "tool_manifest": [
                {
                    "tool_id": t.tool_id,
                    "approval_mode": t.approval_mode,
                    "native_name": t.native_name,
                }
                for t in tools.tools
            ],
            "evidence_manifest": [
                {
                    "id": r.id,
                    "class": r.class_,
                    "classification": r.classification,
                    "payload_hash": r.payload_hash,
                }
                for r in evidence.refs
            ],
            "memory_manifest": [
                {
                    "id": m.id,
                    "tier": m.tier,
                    "classification": m.classification,
                    "promoted_at": m.promoted_at,
                }
                for m in memory.recalls
            ],
            "withheld": [*tools.withheld, *evidence.withheld, *memory.withheld],
        }
    )


def _controls(pack: ContextPack, policy: PolicyResolution, tools: ToolSurface) -> RuntimeControls:
    decisions = policy.decisions
    return RuntimeControls(
        must_refuse=[d.rule_id for d in decisions if d.verdict == "deny"],
        must_escalate=[d.rule_id for d in decisions if "approval" in d.requires],
        obligations=sorted({r for d in decisions for r in d.requires}),
        approval_gates_active=[
            t.tool_id for t in tools.tools if APPROVAL_RANK[t.approval_mode] >= _GATED
        ],
        redaction_rules_active=list(pack.redaction_rules),
    )


def _budget_report(budget: BudgetAllocation, buckets: AssembledBuckets) -> BudgetReport:
    truncated = {
        b: [blk.source for blk in buckets.buckets[b].blocks if blk.truncated]
        for b in BUCKETS
        if buckets.buckets[b].truncated
    }
    return BudgetReport(
        total_tokens=budget.total_tokens,
        allocations=budget.per_bucket,
        used_at_compile={b: buckets.buckets[b].used_tokens for b in BUCKETS},
        bucket_truncations={b: len(sources) for b, sources in truncated.items()},
        truncated_blocks=truncated,
        token_estimator=ESTIMATOR,
    )


def emit_manifests(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`compiled`: the envelope every model call is built from, a hash per stage and over all."""
    pack, ctx, intent = draft.pack, draft.run_context, filled(draft.intent, "intent")
    policy, tools = filled(draft.policy, "policy"), filled(draft.tools, "tools")
    evidence, memory = filled(draft.evidence, "evidence"), filled(draft.memory, "memory")
    budget, buckets = filled(draft.budget, "budget"), filled(draft.buckets, "buckets")
    body = ContextBody(
        pack_version=f"{pack.contract_name}@{pack.contract_version}",
        consumer=intent.consumer,
        intent_id=intent.intent_id,
        system_prompt=_prompt(buckets, SYSTEM_BUCKETS),
        task_prompt=_prompt(buckets, TASK_BUCKETS),
        surfaced_tools=tools.tools,
        manifests=_manifests(ctx.snapshot_id, policy, tools, evidence, memory),
        runtime_controls=_controls(pack, policy, tools),
        budget_report=_budget_report(budget, buckets),
    )
    # The body is dumped once: hashed as the last stage's output, then with stage_hashes added
    # as the envelope that context_hash covers.
    envelope = body.model_dump(mode="json")
    outputs = (intent, policy, tools, evidence, memory, budget, buckets, envelope)
    stage_hashes = {stage: sha256_of(out) for stage, out in zip(STAGES, outputs, strict=True)}
    envelope["stage_hashes"] = stage_hashes
    compiled = CompiledContext(
        **{name: getattr(body, name) for name in ContextBody.model_fields},
        stage_hashes=stage_hashes,
        context_hash=sha256_of(envelope),
    )
    return draft.model_copy(update={"compiled": compiled})
