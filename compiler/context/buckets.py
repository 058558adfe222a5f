"""Stage 7: every prior stage's output as prompt blocks, packed into the eight buckets.

Each bucket is packed by priority, highest first (ties keep input order). A block that does not
fit what is left of its bucket's allocation stays in the bucket with `truncated=True` and empty
text, so the manifests name it: nothing silently disappears. A smaller block after it may still
fit. The pack's redaction rules are applied to evidence, memory and session text as it is packed
(see `pack_bucket`): no text the model sees escapes them.
"""

import json
import re
from collections.abc import Sequence
from typing import Any, NamedTuple

from compiler.context.errors import ContextError
from compiler.context.tokens import estimate_tokens
from schemas.context import (
    BUCKETS,
    AssembledBuckets,
    Block,
    Bucket,
    BudgetAllocation,
    ContextPack,
    EvidenceSet,
    InvokeRequest,
    MemorySet,
    PolicyDecision,
    PolicyResolution,
    SurfacedTool,
    ToolSurface,
)

REDACTED = "[REDACTED]"
TASK_PRIORITY = 100
_VERDICT_PRIORITY = {"deny": 100, "require": 90, "allow": 80}


class _Draft(NamedTuple):  # a tuple: hundreds are made per compile
    source: str
    kind: str
    text: str
    priority: int
    redact: bool = False


def redactor(pack: ContextPack) -> list[re.Pattern[str]]:
    """The pack's redaction rules, compiled; an invalid one is a ContextError naming it."""
    patterns = []
    for i, rule in enumerate(pack.redaction_rules):
        try:
            patterns.append(re.compile(rule))
        except re.error as exc:
            raise ContextError(
                "CONTEXT_PACK_INVALID",
                f"redaction_rules[{i}] {rule!r} of context pack {pack.contract_name}@"
                f"{pack.contract_version} is not a valid regex ({exc}); fix or remove it.",
            ) from None
    return patterns


def _redact(text: str, patterns: Sequence[re.Pattern[str]]) -> str:
    for p in patterns:
        text = p.sub(REDACTED, text)
    return text


def pack_bucket(
    drafts: Sequence[_Draft], budget: int, patterns: Sequence[re.Pattern[str]] = ()
) -> dict[str, Any]:
    """Blocks by priority desc; a block over what is left is kept, truncated and emptied.

    A block is sized on its text as given; only a block that fits is redacted (a truncated block
    has no text left to redact), and it is packed if it still fits once redacted. Redacting
    after the size check keeps the regex work proportional to what the model sees; the count
    stays conservative, since a redaction rarely lengthens a text by more than a token.
    Returns BucketContent's fields (validated once per compile, for speed).
    """
    blocks: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for d in sorted(drafts, key=lambda d: -d.priority):
        text = d.text
        n = estimate_tokens(text)
        fits = used + n <= budget
        if fits and d.redact and patterns:
            text = _redact(text, patterns)
            n = estimate_tokens(text)
            fits = used + n <= budget
        if fits:
            used += n
        else:
            truncated = True
        blocks.append(
            {
                "source": d.source,
                "kind": d.kind,
                "text": text if fits else "",
                "priority": d.priority,
                "tokens": n,
                "truncated": not fits,
            }
        )
    return {"blocks": blocks, "used_tokens": used, "budget_tokens": budget, "truncated": truncated}


def _declared(prefix: str, blocks: Sequence[Block]) -> list[_Draft]:
    return [_Draft(f"{prefix}[{i}]", b.kind, b.text, b.priority) for i, b in enumerate(blocks)]


def _policy_text(d: PolicyDecision) -> str:
    head = {"deny": "MUST REFUSE: ", "require": f"REQUIRED ({', '.join(d.requires)}): "}
    text = f"- {head.get(d.verdict, '')}{d.rule_id} ({d.bundle_id})"
    text += f": {d.rationale}" if d.rationale else ""
    if d.forbids:
        text += f" Withholds tools: {', '.join(d.forbids)}."
    return text


def _tool_text(t: SurfacedTool) -> str:
    if t.native_name is not None:
        return f"- `{t.native_name}` ({t.tool_id}; approval: {t.approval_mode}): {t.description}"
    args = json.dumps(t.input_schema, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return (
        f'- `forge_bridge.call("{t.tool_id}", args)` (approval: {t.approval_mode}): '
        f"{t.description}\n  args schema: {args}"
    )


def assemble_buckets(
    pack: ContextPack,
    req: InvokeRequest,
    policy: PolicyResolution,
    tools: ToolSurface,
    evidence: EvidenceSet,
    memory: MemorySet,
    budget: BudgetAllocation,
) -> AssembledBuckets:
    """The eight buckets, each packed into its allocation."""
    patterns = redactor(pack)
    drafts: dict[Bucket, list[_Draft]] = {
        "system": _declared("system", pack.system_blocks),
        "developer": _declared("developer", pack.developer_blocks),
        "task": [
            _Draft("task:message", "task", req.message, TASK_PRIORITY),
            *_declared("task:sections", req.sections),
        ],
        "policy": [
            _Draft(
                f"policy:{d.policy_decision_id}",
                "policy",
                _policy_text(d),
                _VERDICT_PRIORITY[d.verdict],
            )
            for d in policy.decisions
        ],
        "tools": [_Draft(f"tool:{t.tool_id}", "tool", _tool_text(t), 50) for t in tools.tools],
        "evidence": [
            _Draft(
                f"evidence:{r.id}",
                r.class_,
                f"- {r.id} ({r.class_}, {r.classification}): {r.summary}",
                r.priority,
                redact=True,
            )
            for r in evidence.refs
        ],
        "memory": [
            _Draft(
                f"memory:{m.id}",
                m.tier,
                f"- ({m.tier}, promoted {m.promoted_at}) {m.text}",
                50,
                redact=True,
            )
            for m in memory.recalls
        ],
        "session": [
            _Draft(f"session[{i}]", b.kind, f"{b.kind}: {b.text}", b.priority, redact=True)
            for i, b in enumerate(req.session)
        ],
    }
    return AssembledBuckets.model_validate(
        {"buckets": {b: pack_bucket(drafts[b], budget.per_bucket[b], patterns) for b in BUCKETS}}
    )
