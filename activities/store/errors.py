"""Errors the stores raise: each names what was wrong and what to do about it."""

from __future__ import annotations

__all__ = [
    "ArtifactCorrupt",
    "ArtifactNotFound",
    "ArtifactTooLarge",
    "ConcurrencyError",
    "ConflictError",
    "MissingCauseError",
    "SchemaNotMigrated",
    "StoreError",
    "UnsafeSource",
]


class StoreError(Exception):
    """Base class of every store error."""


class ConcurrencyError(StoreError):
    """A stream moved on since the caller read it (optimistic concurrency)."""

    def __init__(self, stream_id: str, expected: int, actual: int) -> None:
        self.stream_id = stream_id
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"stream {stream_id!r} is at seq {actual}, expected {expected}: "
            "another writer appended first; re-read the stream and decide again"
        )


class ConflictError(StoreError):
    """An event_id is already stored with different content (or in another stream)."""


class MissingCauseError(StoreError, ValueError):
    """A non-root event was appended without `caused_by`."""

    def __init__(self, event_type: str, event_id: str) -> None:
        self.event_type = event_type
        self.event_id = event_id
        super().__init__(
            f"event {event_id!r} of type {event_type!r} has no caused_by: only root events "
            "(run.started.v1, run.submitted.v1) may omit it"
        )


class SchemaNotMigrated(StoreError):
    """The database schema is missing or older than this version of Forge."""


class ArtifactNotFound(StoreError, KeyError):
    """No blob is stored under the requested sha256."""

    def __str__(self) -> str:
        # KeyError would repr() the message; people read this one.
        return str(self.args[0]) if self.args else "artifact not found"


class ArtifactCorrupt(StoreError):
    """A stored blob's bytes no longer hash to its address."""


class ArtifactTooLarge(StoreError, ValueError):
    """A blob is larger than the caller allowed."""


class UnsafeSource(StoreError, ValueError):
    """A source path is a symlink or not a regular file, so it is not read."""
