"""Stage 5: promoted memory from the caller's recaller, filtered and capped per intent.

Only PromotedMemory reaches this stage (raw capture has no type here). A recall of another
tenant, another subject, another intent or a classification the pack does not admit is withheld
with the reason, as is every recall past the pack's `max_per_intent`.
"""

from compiler.context.draft import MemoryRecaller, Retrievers, filled
from schemas.context import (
    ContextDraft,
    ContextPack,
    IntentRow,
    MemoryQuery,
    MemorySet,
    PromotedMemory,
    RunContext,
    Withheld,
)

__all__ = ["MemoryRecaller", "recall_memory"]


def _reason(m: PromotedMemory, pack: ContextPack, ctx: RunContext, intent: IntentRow) -> str | None:
    allowed = pack.memory.classifications
    if m.tenant_id != ctx.tenant_id:
        return "belongs to another tenant"
    if m.user_id is not None and m.user_id != ctx.user_id:
        return "belongs to another subject"
    if m.intent_id != intent.intent_id:
        return f"promoted for intent {m.intent_id}"
    if allowed is not None and m.classification not in allowed:
        return f"classification {m.classification} is not admitted by the pack"
    return None


def recall_memory(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`memory`: at most `max_per_intent` recalls of this tenant, subject and intent, in order."""
    pack, ctx = draft.pack, draft.run_context
    intent, recaller = filled(draft.intent, "intent"), retrievers.memory
    if recaller is None:
        return draft.model_copy(update={"memory": MemorySet(recalls=[], withheld=[])})
    query = MemoryQuery(intent_id=intent.intent_id, tenant_id=ctx.tenant_id, user_id=ctx.user_id)
    cap = pack.memory.max_per_intent
    recalls: list[PromotedMemory] = []
    withheld: list[Withheld] = []
    for m in recaller(query):
        reason = _reason(m, pack, ctx, intent)
        if reason is None and len(recalls) >= cap:
            reason = f"over the pack's max_per_intent of {cap}"
        if reason is not None:
            # another tenant's ids stay out of this tenant's manifests
            mid = m.id if m.tenant_id == ctx.tenant_id else "(another tenant's recall)"
            withheld.append(Withheld(kind="memory", id=mid, reason=reason))
        else:
            recalls.append(m)
    return draft.model_copy(update={"memory": MemorySet(recalls=recalls, withheld=withheld)})
