"""Credentials masked in text a process wrote, kept until they are recorded as events.

A log line, a failure, a CLI line: the places that mask such text (workers/process/logmask.py,
activities/errors.py, the CLI's error lines) have no event store at hand, and some run where no
I/O may happen (a failure converted inside a workflow task). So they `note` what they masked
here, with the Temporal workflow it happened in and the scope the process acts for (guard
events: activities/store/output_masking.py, drained by a worker every second and by the CLI on
exit). The queue is bounded: when it is full the oldest notes are dropped and counted, and the
next event says how many.
"""

import contextvars
import threading
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import temporalio.activity
import temporalio.workflow

from activities import telemetry_metrics
from compiler.ladder.secrets.mask import Masked, clip
from schemas.guard import OutputSink
from schemas.scope import Scope

__all__ = [
    "CAPACITY",
    "Noted",
    "act_for",
    "clipped",
    "give_back",
    "note",
    "pending",
    "running",
    "take",
]

CAPACITY = 1000  # notes kept between two drains; more are dropped and counted


@dataclass(frozen=True)
class Noted:
    """One text masked: where it was going, who wrote it, in which workflow, for which scope."""

    sink: OutputSink
    source: str
    findings: tuple[Masked, ...]
    workflow_id: str | None
    scope: Scope | None  # the scope the process acted for, if it said (else the default)
    at: datetime


_queue: deque[Noted] = deque()
_lock = threading.Lock()
_dropped = 0
_acting: contextvars.ContextVar[Scope | None] = contextvars.ContextVar("forge_acting_scope")


def act_for(scope: Scope | None) -> None:
    """Say which scope this process (or this task) acts for: maskings outside a run go there.

    None: no scope of its own (they go to the default tenant).
    """
    _acting.set(scope)


def note(sink: OutputSink, source: str | None, found: Sequence[Masked]) -> None:
    """Keep what was masked in a text `source` wrote to `sink` (nothing when nothing was).

    With no `source`, it is the activity or workflow running (`running()`).
    """
    global _dropped
    if not found:
        return
    telemetry_metrics.guard_findings(sink, len(found))
    workflow_id = _workflow_id()
    noted = Noted(
        sink,
        source or running(),
        tuple(found),
        workflow_id,
        _acting.get(None),
        datetime.now(UTC),
    )
    with _lock:
        if len(_queue) >= CAPACITY:
            _queue.popleft()
            _dropped += 1
        _queue.append(noted)


def clipped(
    text: str,
    limit: int,
    sink: OutputSink,
    *,
    keep: Literal["head", "tail"] = "head",
    lines: int | None = None,
    source: str | None = None,
) -> str:
    """`text` masked and cut (compiler.ladder.secrets.mask.clip), what was masked noted.

    Every cut of a text on its way to storage, a log, an event, a failure or a prompt goes
    through here: cut first, a secret's body could pass without what identifies it.
    """
    cut, found = clip(text, limit, keep=keep, lines=lines)
    note(sink, source, found)
    return cut


def pending() -> int:
    """How many notes wait to be recorded."""
    with _lock:
        return len(_queue)


def take() -> tuple[list[Noted], int]:
    """Every note kept so far, oldest first, and how many were dropped before them."""
    global _dropped
    with _lock:
        taken, dropped = list(_queue), _dropped
        _queue.clear()
        _dropped = 0
    return taken, dropped


def give_back(notes: Sequence[Noted], dropped: int) -> None:
    """Put notes that could not be recorded back in front of the queue (a later drain retries)."""
    global _dropped
    with _lock:
        room = max(CAPACITY - len(_queue), 0)
        kept = list(notes)[-room:] if room else []
        _dropped += dropped + len(notes) - len(kept)
        _queue.extendleft(reversed(kept))


def running() -> str:
    """What the current code is: an activity and its attempt, a workflow, or neither."""
    if temporalio.activity.in_activity():
        info = temporalio.activity.info()
        return f"activity {info.activity_type} (attempt {info.attempt})"
    if temporalio.workflow.in_workflow():
        return f"workflow {temporalio.workflow.info().workflow_type}"
    return "process"


def _workflow_id() -> str | None:
    """The workflow the current code runs in or for (an activity's or a workflow task's)."""
    if temporalio.activity.in_activity():
        return temporalio.activity.info().workflow_id
    if temporalio.workflow.in_workflow():
        return temporalio.workflow.info().workflow_id
    return None
