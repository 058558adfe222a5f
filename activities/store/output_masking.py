"""Maskings a process noted in its logs, failures and CLI lines, written as guard events.

Each note (activities/masked_output.py) becomes a guard.output_masked.v1 in the guard stream of
the tenant it belongs to: the tenant of the run whose workflow it happened in, when the store
knows that run, else the scope the process acted for, else the default tenant.
"""

import hashlib

from activities import masked_output
from activities.masked_output import Noted
from activities.store.events import EventStore
from schemas.event_catalogue import payload_of
from schemas.event_ids import guard_stream
from schemas.events import EventDraft
from schemas.guard import GUARD_OUTPUT_MASKED, MaskedFinding, OutputMasked
from schemas.scope import Scope

__all__ = ["output_draft", "record_noted"]


def record_noted(events: EventStore) -> int:
    """Write every noted masking as its event; return how many were written.

    What cannot be written (the store is down) goes back to the queue for the next drain.
    """
    notes, dropped = masked_output.take()
    if not notes:
        return 0
    try:
        runs: dict[str, tuple[Scope, str] | None] = {}
        batches: list[tuple[str, list[EventDraft]]] = []
        for noted in notes:
            draft = output_draft(noted, _run_of(events, noted.workflow_id, runs), dropped)
            dropped = 0  # counted once, on the first event after the drop
            batches.append((guard_stream(draft.scope.tenant), [draft]))
        events.append_batches(batches)
    except Exception:
        masked_output.give_back(notes, dropped)
        raise
    return len(notes)


def output_draft(noted: Noted, run: tuple[Scope, str] | None, dropped: int = 0) -> EventDraft:
    """The guard.output_masked.v1 for one note; `run` is the (scope, run id) it happened in.

    Its id is derived from the note, so a drain retried after its write was lost writes the
    same event.
    """
    scope, run_id = run if run else (noted.scope or Scope.default(), None)
    record = OutputMasked(
        sink=noted.sink,
        source=noted.source,
        workflow_id=noted.workflow_id,
        findings=[
            MaskedFinding(path=f.path, detector=f.detector, masked=f.masked) for f in noted.findings
        ],
        dropped=dropped,
    )
    seed = repr((noted.sink, noted.source, noted.workflow_id, noted.at, noted.findings, dropped))
    return EventDraft(
        event_id="guard-out-" + hashlib.sha256(seed.encode()).hexdigest()[:32],
        type=GUARD_OUTPUT_MASKED,
        scope=scope,
        run_id=run_id,
        timestamp=noted.at,
        payload=payload_of(GUARD_OUTPUT_MASKED, record),
    )


def _run_of(
    events: EventStore, workflow_id: str | None, seen: dict[str, tuple[Scope, str] | None]
) -> tuple[Scope, str] | None:
    """(scope, run id) of the run whose workflow id this is, if the store holds that run."""
    if workflow_id is None:
        return None
    if workflow_id not in seen:
        tenant = events.run_tenant(workflow_id)
        first = (
            []
            if tenant is None
            else events.list_events(run_id=workflow_id, tenant_id=tenant, limit=1)
        )
        seen[workflow_id] = (first[0].scope, workflow_id) if first else None
    return seen[workflow_id]
