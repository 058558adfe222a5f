"""Event payloads with their credentials masked, and the guard.masked.v1 event for each."""

import hashlib
from collections.abc import Sequence
from datetime import datetime

from compiler.ladder.secrets.mask import Masked, mask_value
from schemas.event_catalogue import payload_of
from schemas.events import EventDraft
from schemas.guard import GUARD_MASKED, MaskedFinding, SecretsMasked
from schemas.scope import Scope

__all__ = ["guard_draft", "masked_drafts"]


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
        findings.append(
            guard_draft(
                draft.event_id,
                draft.type,
                stream_id,
                found,
                scope=draft.scope,
                run_id=draft.run_id,
                session_id=draft.session_id,
                caused_by=draft.event_id,
                timestamp=draft.timestamp,
            )
        )
    return out, findings


def guard_draft(
    event_id: str,
    event_type: str,
    stream_id: str,
    found: list[Masked],
    *,
    scope: Scope,
    run_id: str | None,
    session_id: str | None,
    caused_by: str | None,
    timestamp: datetime,
    seed: str | None = None,
) -> EventDraft:
    """The guard.masked.v1 event for event `event_id` (or a call recorded under that id).

    It names what was masked and by which detector, never the value; its id is derived from
    `seed` (by default `event_id`), so a retry writes the same event.
    """
    record = SecretsMasked(
        event_id=event_id,
        event_type=event_type,
        stream_id=stream_id,
        findings=[MaskedFinding(path=f.path, detector=f.detector, masked=f.masked) for f in found],
    )
    digest = hashlib.sha256((seed or event_id).encode()).hexdigest()[:32]
    return EventDraft(
        event_id=f"guard-{digest}",
        type=GUARD_MASKED,
        scope=scope,
        run_id=run_id,
        session_id=session_id,
        caused_by=caused_by,
        timestamp=timestamp,
        payload=payload_of(GUARD_MASKED, record),
    )
