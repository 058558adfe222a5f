"""Errors the stores raise: each names what was wrong and what to do about it."""

from __future__ import annotations

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "ArtifactCorrupt",
    "ArtifactNotFound",
    "ArtifactTooLarge",
    "ConcurrencyError",
    "ConflictError",
    "MissingCauseError",
    "StoreError",
    "UnsafeSource",
]


class StoreError(ForgeError):
    """Base class of every store error."""

    code = ErrorCode.STORE_ERROR


class ConcurrencyError(StoreError):
    """A stream moved on since the caller read it (optimistic concurrency)."""

    code = ErrorCode.STORE_CONCURRENCY

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

    code = ErrorCode.STORE_CONFLICT


class MissingCauseError(StoreError, ValueError):
    """A non-root event was appended without `caused_by`."""

    code = ErrorCode.MISSING_CAUSE

    def __init__(self, event_type: str, event_id: str) -> None:
        self.event_type = event_type
        self.event_id = event_id
        super().__init__(
            f"event {event_id!r} of type {event_type!r} has no caused_by: only root events "
            "(run.started.v1, run.submitted.v1) may omit it"
        )


class ArtifactNotFound(StoreError, KeyError):
    """No blob is stored under the requested sha256."""

    code = ErrorCode.ARTIFACT_NOT_FOUND  # ForgeError's str(), not KeyError's repr()


class ArtifactCorrupt(StoreError):
    """A stored blob's bytes no longer hash to its address."""

    code = ErrorCode.ARTIFACT_CORRUPT


class ArtifactTooLarge(StoreError, ValueError):
    """A blob is larger than the caller allowed."""

    code = ErrorCode.ARTIFACT_TOO_LARGE


class UnsafeSource(StoreError, ValueError):
    """A source path is a symlink or not a regular file, so it is not read."""

    code = ErrorCode.UNSAFE_SOURCE
