"""Stage 4: evidence from the caller's retriever, bound to the run's pinned snapshot.

The compiler never fetches evidence itself: the caller (an activity, the replay harness, a
test) injects a retriever, so the compile stays pure and replays against recorded evidence.
A ref from another snapshot, of a classification the pack does not admit, or repeating an id
already taken, is withheld with the reason; the rest keep the retriever's order.
"""

from compiler.context.draft import EvidenceRetriever, Retrievers, filled
from schemas.context import ContextDraft, EvidenceQuery, EvidenceRef, EvidenceSet, Withheld

__all__ = ["EvidenceRetriever", "retrieve_evidence"]


def retrieve_evidence(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`evidence`: the retriever's refs of this run's snapshot and the pack's classifications."""
    pack, ctx, req = draft.pack, draft.run_context, draft.request
    intent, retriever = filled(draft.intent, "intent"), retrievers.evidence
    if retriever is None:
        return draft.model_copy(update={"evidence": EvidenceSet(refs=[], withheld=[])})
    query = EvidenceQuery(
        intent_id=intent.intent_id,
        query=req.context_query,
        tenant_id=ctx.tenant_id,
        snapshot_id=ctx.snapshot_id,
    )
    allowed = pack.evidence.classifications
    refs: list[EvidenceRef] = []
    withheld: list[Withheld] = []
    seen: set[str] = set()
    for ref in retriever(query):
        reason = None
        if ref.snapshot_id != ctx.snapshot_id:
            reason = f"snapshot {ref.snapshot_id} is not the run's pinned {ctx.snapshot_id}"
        elif allowed is not None and ref.classification not in allowed:
            reason = f"classification {ref.classification} is not admitted by the pack"
        elif ref.id in seen:
            reason = "duplicate id (the first one is kept)"
        if reason is not None:
            withheld.append(Withheld(kind="evidence", id=ref.id, reason=reason))
            continue
        seen.add(ref.id)
        refs.append(ref)
    return draft.model_copy(update={"evidence": EvidenceSet(refs=refs, withheld=withheld)})
