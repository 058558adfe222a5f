"""Stage 7: every prior stage's output as prompt blocks, packed into the eight buckets.

Each bucket is packed by priority, highest first (ties keep input order). A block that does not
fit what is left of its bucket's allocation stays in the bucket with `truncated=True` and empty
text, so the manifests name it: nothing silently disappears. A smaller block after it may still
fit. The pack's redaction rules are applied to evidence, memory and session text as it is packed
(see `pack_bucket` and redaction.py): no text the model sees escapes them. Every block, redacted
or not, also has its credentials masked (compiler/ladder/secrets/mask.py).
"""

import json
from collections.abc import Sequence
from typing import Any, NamedTuple

from compiler.context.draft import Retrievers, filled
from compiler.context.redaction import Redactor, redact, redactors
from compiler.context.tokens import estimate_tokens
from compiler.ladder.secrets.mask import mask_text
from schemas.context import (
    BUCKETS,
    AssembledBuckets,
    Block,
    Bucket,
    ContextDraft,
    PolicyDecision,
    SurfacedTool,
)

TASK_PRIORITY = 100
_VERDICT_PRIORITY = {"deny": 100, "require": 90, "allow": 80}
# what json.dumps(sort_keys=True, separators=(",", ":"), ensure_ascii=False) does, without
# building an encoder for each of a few hundred tool schemas
_SCHEMA_JSON = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode


# A block before packing: (source, kind, text, priority, redact?). A plain tuple, since hundreds
# are made per compile; _Draft names the fields for callers that build a few.
Draft = tuple[str, str, str, int, bool]


class _Draft(NamedTuple):
    source: str
    kind: str
    text: str
    priority: int
    redact: bool = False


def pack_bucket(
    drafts: Sequence[Draft], budget: int, rules: Sequence[Redactor] = ()
) -> dict[str, Any]:
    """Blocks by priority desc; a block over what is left is kept, truncated and emptied.

    A block is sized once, on its text as given; only a block that fits is redacted (a truncated
    block has no text left to redact), and it is packed if it still fits once redacted (resized
    only if redaction changed it). Redacting after the size check keeps the regex work
    proportional to what the model sees; the count stays conservative, since a redaction rarely
    lengthens a text by more than a token. Returns BucketContent's fields: the blocks of all
    eight buckets are validated in one call per compile (assemble_buckets), the fastest way
    pydantic builds hundreds of models.
    """
    blocks: list[dict[str, Any]] = []
    used = 0
    truncated = False
    for source, kind, text, priority, redacts in sorted(drafts, key=_by_priority):
        n = estimate_tokens(text)
        fits = used + n <= budget
        if fits and redacts and rules:
            redacted = redact(text, rules)
            if redacted != text:
                text, n = redacted, estimate_tokens(redacted)
                fits = used + n <= budget
        if fits:
            masked = mask_text(text)[0]  # credentials never reach a model, redact rule or not
            if masked != text:
                text, n = masked, estimate_tokens(masked)
                fits = used + n <= budget
        if fits:
            used += n
        else:
            truncated = True
            text = ""
        blocks.append(
            {
                "source": source,
                "kind": kind,
                "text": text,
                "priority": priority,
                "tokens": n,
                "truncated": not fits,
            }
        )
    return {"blocks": blocks, "used_tokens": used, "budget_tokens": budget, "truncated": truncated}


def _by_priority(d: Draft) -> int:
    return -d[3]  # the priority; sorted() is stable: ties keep input order


def _declared(prefix: str, blocks: Sequence[Block]) -> list[Draft]:
    return [(f"{prefix}[{i}]", b.kind, b.text, b.priority, False) for i, b in enumerate(blocks)]


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
    args = _SCHEMA_JSON(t.input_schema)
    return (
        f'- `forge_bridge.call("{t.tool_id}", args)` (approval: {t.approval_mode}): '
        f"{t.description}\n  args schema: {args}"
    )


def assemble_buckets(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`buckets`: the eight of them, each packed into its allocation."""
    pack, req = draft.pack, draft.request
    policy, tools = filled(draft.policy, "policy"), filled(draft.tools, "tools")
    evidence, memory = filled(draft.evidence, "evidence"), filled(draft.memory, "memory")
    budget = filled(draft.budget, "budget")
    rules = redactors(pack)
    drafts: dict[Bucket, list[Draft]] = {
        "system": _declared("system", pack.system_blocks),
        "developer": _declared("developer", pack.developer_blocks),
        "task": [
            ("task:message", "task", req.message, TASK_PRIORITY, False),
            *_declared("task:sections", req.sections),
        ],
        "policy": [
            (
                f"policy:{d.policy_decision_id}",
                "policy",
                _policy_text(d),
                _VERDICT_PRIORITY[d.verdict],
                False,
            )
            for d in policy.decisions
        ],
        "tools": [(f"tool:{t.tool_id}", "tool", _tool_text(t), 50, False) for t in tools.tools],
        "evidence": [
            (
                f"evidence:{r.id}",
                r.class_,
                f"- {r.id} ({r.class_}, {r.classification}): {r.summary}",
                r.priority,
                True,
            )
            for r in evidence.refs
        ],
        "memory": [
            (
                f"memory:{m.id}",
                m.tier,
                f"- ({m.tier}, promoted {m.promoted_at}) {m.text}",
                50,
                True,
            )
            for m in memory.recalls
        ],
        "session": [
            (f"session[{i}]", b.kind, f"{b.kind}: {b.text}", b.priority, True)
            for i, b in enumerate(req.session)
        ],
    }
    buckets = AssembledBuckets.model_validate(
        {"buckets": {b: pack_bucket(drafts[b], budget.per_bucket[b], rules) for b in BUCKETS}}
    )
    return draft.model_copy(update={"buckets": buckets})
