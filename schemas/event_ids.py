"""The one way event ids and stream ids are made (persisted compatibility data).

An event id is `<head>:<type>[:<part>...]`: the head is the run id (or `-` for runless work, or
an evaluation's proof key), the parts say which occurrence of the type it is (a step key, an
attempt, a call index). Ids are deterministic, so a retried append of the same event is a no-op
in the store; never change what these functions return for ids that may already be stored.
"""

import hashlib
from typing import Literal

from schemas.names import CAPSULE_STREAM, GUARD_STREAM, WEBHOOK_STREAM

__all__ = [
    "EVENT_ID_MAX",
    "StreamKind",
    "capsule_stream",
    "event_id",
    "guard_stream",
    "stream_id",
    "webhook_stream",
]

EVENT_ID_MAX = 200  # EventDraft.event_id's max_length
_HEAD = 180

# The streams of a run: its lifecycle, each step (events, usage ledger, bridge and model calls),
# each gate, its budget, its recipe trail, its planner and its compile passes' model calls.
StreamKind = Literal["run", "step", "gate", "budget", "recipes", "plan", "compile"]


def event_id(head: str, event_type: str, *parts: str) -> str:
    """`<head>:<event_type>[:<part>...]` (empty parts left out), at most EVENT_ID_MAX characters.

    A longer id keeps its first 180 characters and ends in `~` and 16 hex digits of the whole
    id's sha256, so it stays deterministic and distinct.
    """
    full = ":".join([head, event_type, *(p for p in parts if p)])
    if len(full) <= EVENT_ID_MAX:
        return full
    return f"{full[:_HEAD]}~{hashlib.sha256(full.encode('utf-8')).hexdigest()[:16]}"


def stream_id(run_id: str, kind: StreamKind, key: str | None = None) -> str:
    """`<run_id>:<kind>[:<key>]`, e.g. `r1:run`, `r1:step:extract`, `r1:gate:g1`."""
    return f"{run_id}:{kind}" if key is None else f"{run_id}:{kind}:{key}"


def guard_stream(tenant: str) -> str:
    """`guard:<tenant>`: the tenant's guard findings (what was masked, where)."""
    return GUARD_STREAM + tenant


def webhook_stream(tenant: str) -> str:
    """`webhooks:<tenant>`: the tenant's webhook delivery records."""
    return WEBHOOK_STREAM + tenant


def capsule_stream(tenant: str, name: str) -> str:
    """`capsules:<tenant>:<name>`: one capsule's versions of one tenant."""
    return f"{CAPSULE_STREAM}{tenant}:{name}"
