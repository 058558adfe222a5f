"""The event envelope of seed 001: every action in Forge lands in an append-only log."""

from datetime import datetime
from typing import Any, ClassVar

from pydantic import Field

from schemas.guard import GUARD_OUTPUT_MASKED
from schemas.scope import SYSTEM_ACTOR, Actor, ActorKind, Scope, Scoped

__all__ = ["ROOT_EVENT_TYPES", "SYSTEM_ACTOR", "Actor", "ActorKind", "Event", "EventDraft"]

# Root events may omit caused_by; every other event must name its cause. An imported capsule
# version's cause is in another installation; text a process masked has no event behind it.
ROOT_EVENT_TYPES = frozenset(
    {"run.started.v1", "run.submitted.v1", "capsule.imported.v1", GUARD_OUTPUT_MASKED}
)


class EventDraft(Scoped):
    """What a caller appends; the store assigns sequence, hashes and chain links.

    The scope holds the envelope's tenant, project and actor (seed 001 spells them `tenant_id`,
    `project_id` and `actor`: the store's columns and the content hash keep that flat form).
    """

    _legacy_actor: ClassVar[bool] = True

    event_id: str = Field(min_length=1, max_length=200)
    type: str = Field(pattern=r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*\.v[0-9]+$")
    scope: Scope = Scope.default()
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
