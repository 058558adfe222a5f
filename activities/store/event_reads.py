"""Reading the event log: streams, filtered lists, cursor pages, tenants, chain verification.

The event store's read side (activities/store/events.py provides the transactions): every read
that names a tenant runs scoped to it, so on PostgreSQL row-level security holds it there.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar

from sqlalchemy import Engine, select
from sqlalchemy.engine import Connection

from activities.store.queries import Statements
from activities.store.records import ChainBreak, ChainVerification, chain_fault, event_from_row
from activities.store.tables import events, tenant_heads
from activities.store.tenancy import scoped
from schemas.events import Event

__all__ = ["EventReads"]


class EventReads(ABC):
    """The reads of one event log; the store provides the engine and its transactions."""

    _engine: Engine
    _q: Statements
    _snapshot: ClassVar[dict[str, Any]] = {}
    _tenant_list: ClassVar[Any]
    _run_tenant: ClassVar[Any]

    @abstractmethod
    def _reading(self, tenant_id: str | None) -> AbstractContextManager[Connection]:
        """A read transaction, scoped to `tenant_id` when one is given."""

    def read_stream(
        self, stream_id: str, after_seq: int = 0, *, tenant_id: str | None = None
    ) -> list[Event]:
        """The events of one stream with seq > `after_seq`, in seq order.

        With `tenant_id` the read runs scoped to that tenant (on PostgreSQL the only way a
        role other than the schema owner sees any event); without, it runs unscoped.
        """
        params = {"stream": stream_id, "after": after_seq}
        with self._reading(tenant_id) as conn:
            return [event_from_row(r) for r in conn.execute(self._q.read_stream, params).mappings()]

    def list_events(
        self,
        *,
        run_id: str | None = None,
        type: str | None = None,
        tenant_id: str | None = None,
        limit: int = 1000,
        run_ids: Sequence[str] | None = None,
        types: Sequence[str] | None = None,
    ) -> list[Event]:
        """Events matching every given filter, in tenant chain order, at most `limit`."""
        c = events.c
        query = select(events).order_by(c.tenant_id, c.tenant_seq).limit(limit)
        if run_id is not None:
            query = query.where(c.run_id == run_id)
        if run_ids is not None:
            query = query.where(c.run_id.in_(list(run_ids)))
        if type is not None:
            query = query.where(c.type == type)
        if types is not None:
            query = query.where(c.type.in_(list(types)))
        if tenant_id is not None:
            query = query.where(c.tenant_id == tenant_id)
        with self._reading(tenant_id) as conn:
            return [event_from_row(r) for r in conn.execute(query).mappings()]

    def page(
        self,
        tenant_id: str,
        *,
        type: str | None = None,
        run_id: str | None = None,
        types: Sequence[str] | None = None,
        after: int | None = None,
        before: int | None = None,
        newest_first: bool = False,
        limit: int = 100,
    ) -> list[tuple[int, Event]]:
        """A page of the tenant's events, each with its place in the tenant's chain.

        `after` / `before` continue from a place a caller saw: a cursor that stays right
        however many events are appended meanwhile.
        """
        c = events.c
        query = select(events).where(c.tenant_id == tenant_id)
        if type is not None:
            query = query.where(c.type == type)
        if run_id is not None:
            query = query.where(c.run_id == run_id)
        if types is not None:
            query = query.where(c.type.in_(list(types)))
        if after is not None:
            query = query.where(c.tenant_seq > after)
        if before is not None:
            query = query.where(c.tenant_seq < before)
        order = c.tenant_seq.desc() if newest_first else c.tenant_seq
        with scoped(self._engine, tenant_id) as conn:
            rows = conn.execute(query.order_by(order).limit(limit)).mappings()
            return [(r["tenant_seq"], event_from_row(r)) for r in rows]

    def tenants(self) -> list[str]:
        """Every tenant that has at least one event: a cross-tenant read of ids only.

        On PostgreSQL it is the SECURITY DEFINER function forge_event_tenants().
        """
        with self._engine.connect() as conn:
            return list(conn.execute(self._tenant_list).scalars())

    def run_tenant(self, run_id: str) -> str | None:
        """The tenant whose events name `run_id`, if any: a cross-tenant read of one id."""
        with self._engine.connect() as conn:
            return conn.execute(self._run_tenant, {"run": run_id}).scalar()

    def verify_chain(self, tenant_id: str) -> ChainVerification:
        """Re-hash every event of a tenant from its row and check each prev_hash link.

        Stops at, and names, the first broken link: a row whose content no longer hashes to
        its content_hash, a prev_hash that does not name the previous event, a gap in the
        chain, or a chain shorter than its recorded head.
        """
        query = select(events).where(events.c.tenant_id == tenant_id).order_by(events.c.tenant_seq)
        # Head and rows must come from one snapshot, or a concurrent append would look like a
        # chain longer than its head.
        with scoped(self._engine, tenant_id, **self._snapshot) as conn:
            head = conn.execute(
                select(tenant_heads.c.last_seq).where(tenant_heads.c.tenant_id == tenant_id)
            ).scalar()
            # Streamed in batches; closed explicitly because the walk may stop early.
            rows = conn.execution_options(yield_per=500).execute(query)
            try:
                checked, broken = _walk(rows.mappings())
            finally:
                rows.close()
        recorded = head or 0
        if broken is None and recorded != checked:
            reason = f"the tenant head records {recorded} events but {checked} are stored"
            broken = ChainBreak(tenant_seq=checked + 1, event_id=None, reason=reason)
        return ChainVerification(
            tenant_id=tenant_id, ok=broken is None, checked=checked, first_broken=broken
        )


def _walk(rows: Iterable[Mapping[Any, Any]]) -> tuple[int, ChainBreak | None]:
    """Count rows in chain order until the first one that breaks the chain."""
    checked = 0
    previous: str | None = None
    for row in rows:
        checked += 1
        reason = chain_fault(row, checked, previous)
        if reason is not None:
            return checked, ChainBreak(
                tenant_seq=row["tenant_seq"], event_id=row["event_id"], reason=reason
            )
        previous = row["content_hash"]
    return checked, None
