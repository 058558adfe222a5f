"""Stage 1: the request's intent, verified against the pack's catalog (never guessed)."""

from compiler.context.draft import Retrievers
from compiler.context.errors import ContextError
from schemas.context import ContextDraft
from schemas.error_codes import ErrorCode


def classify_intent(draft: ContextDraft, *, retrievers: Retrievers) -> ContextDraft:
    """`intent`: the catalog row of the proposed intent; one the pack does not serve refuses."""
    pack, req = draft.pack, draft.request
    for row in pack.intents:
        if row.intent_id == req.intent_id:
            return draft.model_copy(update={"intent": row})
    known = ", ".join(r.intent_id for r in pack.intents)
    raise ContextError(
        ErrorCode.CONTEXT_UNKNOWN_INTENT,
        f"intent {req.intent_id!r} is not in context pack "
        f"{pack.contract_name}@{pack.contract_version} ({pack.consumer}); it serves: {known}. "
        "Send one of those intents, or add a row for it to the pack's intents.",
    )
