"""Credentials masked in what a model is sent and what it answers (issue 18 §2).

The context pack compiler masks every block it packs; this is the last boundary before a
provider: a request's whole content (system prompt, messages, tool results) and the response
as it is recorded and handed to the planner or evaluator. The Code-Act executor also gets the
response verbatim, for its programs only: a program is run as written or refused, never run
masked (activities/harness/program_credentials.py). Each masking is a guard.masked.v1 event in
the tenant's guard stream, naming the model call.
"""

from datetime import UTC, datetime
from typing import TypeVar

from pydantic import BaseModel

from activities.store.masking import guard_draft
from compiler.ladder.secrets.mask import Masked, mask_value
from schemas.budget import MODEL_CALLED
from schemas.events import EventDraft
from schemas.models import CallScope

__all__ = ["finding_draft", "masked"]

M = TypeVar("M", bound=BaseModel)


def masked(model: M, prefix: str) -> tuple[M, list[Masked]]:
    """`model` with credentials masked in every string it holds, and what was masked."""
    raw = model.model_dump(mode="json")
    new, found = mask_value(raw, prefix)
    if not found:
        return model, []
    return type(model).model_validate(new), found


def finding_draft(scope: CallScope, call_event_id: str, found: list[Masked]) -> EventDraft:
    """The guard.masked.v1 event for a model call whose request or response was masked."""
    # Its own id: the store's finding for the model.called event itself would be the default.
    return guard_draft(
        call_event_id,
        MODEL_CALLED,
        scope.stream_id,
        found,
        scope=scope.scope,
        run_id=scope.run_id,
        session_id=None,
        caused_by=scope.caused_by,
        timestamp=datetime.now(UTC),
        seed=f"{call_event_id}:model",
    )
