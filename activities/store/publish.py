"""The publish index: which bytes a run published at which path, in which version.

A mixin of EventStore: the step harness publishes a step's outputs and appends the events that
name them in one transaction (`publish_and_append`), so outputs are published exactly when the
step's completion is recorded, never one without the other.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Engine, select
from sqlalchemy.engine import Connection

from activities.store.records import PublishedArtifact, published_from_row
from activities.store.tables import artifacts_published
from activities.store.tenancy import use_tenant
from schemas.artifacts import ArtifactRef, Provenance
from schemas.events import Event, EventDraft

if TYPE_CHECKING:
    from activities.store.queries import Statements

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


class PublishIndex(ABC):
    """Publishing and reading publications; the event store provides the transactions."""

    _engine: Engine
    _q: Statements

    @abstractmethod
    def _write(self) -> AbstractContextManager[Connection]:
        """A write transaction (the only writer of what it locks until commit)."""

    @abstractmethod
    def _reading(self, tenant_id: str | None) -> AbstractContextManager[Connection]:
        """A read transaction, scoped to `tenant_id` when one is given."""

    @abstractmethod
    def _lock_key(self, conn: Connection, key: str) -> None:
        """Serialize writers of one key (a stream, a published path) until commit."""

    @abstractmethod
    def _append_in(
        self,
        conn: Connection,
        drafts: Sequence[EventDraft],
        *,
        stream_id: str,
        expected_seq: int | None = None,
    ) -> list[Event]:
        """Append inside the caller's write transaction."""

    @abstractmethod
    def _collisions(self, stream_id: str) -> AbstractContextManager[None]:
        """Turn a concurrent write of the same event id into a ConflictError."""

    def publish_artifact(
        self, ref: ArtifactRef, provenance: Provenance, *, tenant_id: str
    ) -> PublishedArtifact:
        """Record `ref` as published by `provenance.run_id` (of `tenant_id`) at `ref.path`.

        The same bytes at the same path are one publication (a retry returns it with
        created=False); new bytes at that path become the next version.
        """
        with self._write() as conn:
            return self._publish_in(conn, ref, provenance, tenant_id)

    def publish_and_append(
        self,
        publications: Sequence[tuple[ArtifactRef, Provenance]],
        events_for: Callable[[list[PublishedArtifact]], list[EventDraft]],
        *,
        stream_id: str,
        tenant_id: str,
    ) -> list[Event]:
        """Publish each (ref, provenance) and append `events_for(publications)`, atomically.

        The publications and the events are all `tenant_id`'s.
        """
        with self._collisions(stream_id), self._write() as conn:
            published = [self._publish_in(conn, ref, prov, tenant_id) for ref, prov in publications]
            return self._append_in(conn, events_for(published), stream_id=stream_id)

    def _publish_in(
        self, conn: Connection, ref: ArtifactRef, provenance: Provenance, tenant_id: str
    ) -> PublishedArtifact:
        digest = ref.sha256 if ref.sha256.startswith("sha256:") else f"sha256:{ref.sha256}"
        if _DIGEST.fullmatch(digest) is None or ref.artifact_id != digest:
            raise ValueError(
                f"artifact ref for {ref.path!r} is not content-addressed: expected artifact_id "
                f"and sha256 'sha256:<64 hex digits>', got {ref.artifact_id!r}, {ref.sha256!r}"
            )
        use_tenant(conn, tenant_id)
        run_id, path = provenance.run_id, ref.path
        at = {"run": run_id, "path": path}
        self._lock_key(conn, f"publish\x00{run_id}\x00{path}")
        # One statement: the publication of these bytes at this path, and the newest version.
        version = 0
        for found in conn.execute(self._q.publication, {**at, "digest": digest}).mappings():
            if found["sha256"] == digest:
                return published_from_row(found)
            version = max(version, found["version"])
        row: dict[str, Any] = {
            "run_id": run_id,
            "tenant_id": tenant_id,
            "path": path,
            "version": version + 1,
            "sha256": digest,
            "size_bytes": ref.size_bytes,
            "media_type": ref.media_type,
            "step_key": provenance.step_key,
            "contract_hash": provenance.contract_hash,
            "provenance": provenance.model_dump(mode="json"),
            "published_at": datetime.now(UTC),
        }
        conn.execute(self._q.publish, [row])
        return published_from_row(row, created=True)

    def list_published(
        self, run_id: str, *, tenant_id: str | None = None
    ) -> list[PublishedArtifact]:
        """Every published version of a run's artifacts, by path then version.

        Scoped to `tenant_id` when given (see EventStore.read_stream).
        """
        query = (
            select(artifacts_published)
            .where(artifacts_published.c.run_id == run_id)
            .order_by(artifacts_published.c.path, artifacts_published.c.version)
        )
        with self._reading(tenant_id) as conn:
            return [published_from_row(r) for r in conn.execute(query).mappings()]

    def latest(
        self, run_id: str, path: str, *, tenant_id: str | None = None
    ) -> PublishedArtifact | None:
        """The highest version published at `path` by `run_id`, if any (scoped as above)."""
        query = (
            select(artifacts_published)
            .where(artifacts_published.c.run_id == run_id, artifacts_published.c.path == path)
            .order_by(artifacts_published.c.version.desc())
            .limit(1)
        )
        with self._reading(tenant_id) as conn:
            row = conn.execute(query).mappings().first()
        return None if row is None else published_from_row(row)


__all__ = ["PublishIndex"]
