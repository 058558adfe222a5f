"""Event payloads with their credentials masked, and the guard.masked.v1 event for each."""

import hashlib
from collections.abc import Sequence

from compiler.ladder.secrets.mask import mask_value
from schemas.event_catalogue import payload_of
from schemas.events import EventDraft
from schemas.guard import GUARD_MASKED, MaskedFinding, SecretsMasked

__all__ = ["GUARD_STREAM", "masked_drafts"]

GUARD_STREAM = "guard:"  # + tenant: the tenant's guard findings


def masked_drafts(
    drafts: Sequence[EventDraft], stream_id: str
) -> tuple[list[EventDraft], list[EventDraft]]:
    """The drafts with credentials masked in their payloads, and a finding event for each.

    A finding's event id is derived from its draft's, so a retried append is the same append.
    """
    out: list[EventDraft] = []
    findings: list[EventDraft] = []
    for draft in drafts:
        payload, found = mask_value(draft.payload)
        if not found:
            out.append(draft)
            continue
        out.append(draft.model_copy(update={"payload": payload}))
        digest = hashlib.sha256(draft.event_id.encode()).hexdigest()[:32]
        record = SecretsMasked(
            event_id=draft.event_id,
            event_type=draft.type,
            stream_id=stream_id,
            findings=[
                MaskedFinding(path=f.path, detector=f.detector, masked=f.masked) for f in found
            ],
        )
        findings.append(
            EventDraft(
                event_id=f"guard-{digest}",
                type=GUARD_MASKED,
                scope=draft.scope,
                run_id=draft.run_id,
                session_id=draft.session_id,
                caused_by=draft.event_id,
                timestamp=draft.timestamp,
                payload=payload_of(GUARD_MASKED, record),
            )
        )
    return out, findings
