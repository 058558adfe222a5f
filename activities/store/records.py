"""Rows to models and back for the event store: UTC timestamps, content hashes, result types."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from activities.store.errors import ConflictError, MissingCauseError
from compiler.hashing import sha256_of
from schemas.artifacts import ArtifactRef, Provenance
from schemas.base import FrozenModel
from schemas.events import ROOT_EVENT_TYPES, Event, EventDraft

__all__ = [
    "ChainBreak",
    "ChainVerification",
    "PublishedArtifact",
    "chain_fault",
    "content_hash",
    "draft_from_row",
    "draft_row",
    "envelope",
    "event_from_row",
    "normalize",
    "prepare_batch",
    "published_from_row",
    "stored_envelope",
    "utc",
]

# The stored envelope (seed 001): the draft's fields with its scope spelled flat, as the
# event table's columns and every content hash already stored have it.
_ENVELOPE_FIELDS = (
    *(name for name in EventDraft.model_fields if name != "scope"),
    "actor",
    "tenant_id",
    "project_id",
)


class ChainBreak(FrozenModel):
    """The first place a tenant's hash chain does not hold."""

    tenant_seq: int
    event_id: str | None
    reason: str


class ChainVerification(FrozenModel):
    """The outcome of re-hashing a tenant's chain from the stored rows."""

    tenant_id: str
    ok: bool
    checked: int
    first_broken: ChainBreak | None = None


class PublishedArtifact(FrozenModel):
    """A row of the publish index; `created` is True only for the call that wrote it."""

    run_id: str
    path: str
    version: int
    sha256: str
    size_bytes: int
    media_type: str | None
    step_key: str
    contract_hash: str
    provenance: Provenance
    published_at: datetime
    created: bool = False

    @property
    def ref(self) -> ArtifactRef:
        """The published content as an artifact reference."""
        return ArtifactRef(
            artifact_id=self.sha256,
            path=self.path,
            sha256=self.sha256,
            size_bytes=self.size_bytes,
            media_type=self.media_type,
        )


def utc(value: datetime) -> datetime:
    """The same instant in UTC; a naive value is taken to be UTC already.

    SQLite keeps no offset, so every timestamp is stored in UTC for the stored row to hash
    the same as the draft it came from.
    """
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def envelope(draft: EventDraft) -> dict[str, Any]:
    """The draft as a flat seed-001 envelope of JSON values (`tenant_id`, `project_id`, `actor`).

    Only the draft's own fields count, so passing a stored `Event` yields its draft's envelope.
    """
    data = draft.model_dump(mode="json", exclude={"scope"}, include=set(EventDraft.model_fields))
    scope = draft.scope
    data.update(
        actor=scope.actor.model_dump(mode="json"), tenant_id=scope.tenant, project_id=scope.project
    )
    return data


def stored_envelope(event: Event) -> dict[str, Any]:
    """A stored event as seed 001 writes it: the flat envelope, its place and its hashes."""
    place = {"stream_id", "seq", "content_hash", "prev_hash", "signature"}
    return {**envelope(event), **event.model_dump(mode="json", include=place)}


def normalize(draft: EventDraft) -> EventDraft:
    """The draft as it will be stored: timestamp in UTC, payload as plain JSON values.

    Only the draft's own fields count, so passing a stored `Event` yields its draft.
    """
    data = envelope(draft)
    data["timestamp"] = utc(draft.timestamp)
    return EventDraft.model_validate(data)


def content_hash(draft: EventDraft) -> str:
    """sha256 over the canonical JSON of the (normalized) draft's flat envelope.

    The flat form is the one hashed before Scope existed: a stored event's hash never changes.
    """
    return sha256_of(envelope(draft))


def draft_row(draft: EventDraft) -> dict[str, Any]:
    """Column values of a normalized draft (envelope fields only)."""
    data = envelope(draft)
    data["timestamp"] = draft.timestamp
    return data


def draft_from_row(row: Mapping[Any, Any]) -> EventDraft:
    """Rebuild the draft a row was written from (raises ValidationError for a mangled row)."""
    data = {name: row[name] for name in _ENVELOPE_FIELDS}
    data["timestamp"] = utc(row["timestamp"])
    return EventDraft.model_validate(data)


def event_from_row(row: Mapping[Any, Any]) -> Event:
    draft = draft_from_row(row)
    return Event.model_validate(
        {
            **draft.model_dump(),
            "stream_id": row["stream_id"],
            "seq": row["seq"],
            "content_hash": row["content_hash"],
            "prev_hash": row["prev_hash"],
            "signature": row["signature"],
        }
    )


def published_from_row(row: Mapping[Any, Any], *, created: bool = False) -> PublishedArtifact:
    data = dict(row)
    data.pop("tenant_id", None)  # the reader's own tenant: the row is only visible to it
    data["provenance"] = Provenance.model_validate(row["provenance"])
    data["published_at"] = utc(row["published_at"])
    return PublishedArtifact.model_validate({**data, "created": created})


def prepare_batch(drafts: Sequence[EventDraft]) -> dict[str, tuple[EventDraft, str]]:
    """Normalize and hash each draft once; reject missing causes and in-batch id reuse."""
    batch: dict[str, tuple[EventDraft, str]] = {}
    for raw in drafts:
        if raw.caused_by is None and raw.type not in ROOT_EVENT_TYPES:
            raise MissingCauseError(raw.type, raw.event_id)
        draft = normalize(raw)
        digest = content_hash(draft)
        seen = batch.get(draft.event_id)
        if seen is not None and seen[1] != digest:
            raise ConflictError(
                f"event {draft.event_id!r} appears twice in one append with different content"
            )
        batch[draft.event_id] = (draft, digest)
    return batch


def chain_fault(row: Mapping[Any, Any], position: int, previous: str | None) -> str | None:
    """Why this row breaks the chain, or None when it holds."""
    if row["tenant_seq"] != position:
        return f"tenant_seq jumps from {position - 1} to {row['tenant_seq']}: events are missing"
    try:
        digest = content_hash(draft_from_row(row))
    except ValidationError as exc:
        return f"the row no longer forms a valid event: {exc.errors()[0]['msg']}"
    if digest != row["content_hash"]:
        return (
            f"content does not hash to the stored content_hash (recomputed {digest}): "
            "the event was changed after it was written"
        )
    if row["prev_hash"] != previous:
        return (
            f"prev_hash {row['prev_hash']} does not link to the previous event's content_hash "
            f"{previous}"
        )
    return None
