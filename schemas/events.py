"""The event envelope of seed 001: every action in Forge lands in an append-only log."""

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from schemas.base import FrozenModel

ActorKind = Literal["human", "agent", "system"]
# Root events may omit caused_by; every other event must name its cause.
ROOT_EVENT_TYPES = frozenset({"run.started.v1", "run.submitted.v1"})


class Actor(FrozenModel):
    id: str
    name: str
    role: str
    kind: ActorKind


SYSTEM_ACTOR = Actor(id="forge", name="Forge", role="platform", kind="system")


class EventDraft(FrozenModel):
    """What a caller appends; the store assigns sequence, hashes and chain links."""

    event_id: str = Field(min_length=1, max_length=200)
    type: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.v[0-9]+$")
    actor: Actor = SYSTEM_ACTOR
    tenant_id: str = "default"
    project_id: str = "default"
    run_id: str | None = None
    session_id: str | None = None
    caused_by: str | None = None
    timestamp: datetime
    prompt_hash: str | None = None
    payload: dict[str, Any] = Field(default_factory=dict)


class Event(EventDraft):
    """A stored event: its place in its stream, its content hash and its tenant chain link."""

    stream_id: str
    seq: int = Field(ge=1)
    content_hash: str
    prev_hash: str | None
    signature: str | None = None
