"""The event store's statements, built once with bind parameters and reused on every call.

Building a SQLAlchemy statement per call (and its cache key) cost more than SQLite's own work
on every append; a statement built once is compiled once and found in the cache after.
"""

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, bindparam, func, insert, or_, select, update

from activities.store.tables import artifacts_published, events, tenant_heads


class Statements:
    """The append, publish and stream-read statements of one event store backend."""

    def __init__(self, locking: Callable[[Select[Any]], Select[Any]], new_heads: Any) -> None:
        """`locking` makes a query lock what it reads; `new_heads` inserts absent tenant heads."""
        self.new_heads = new_heads
        self.stored = select(events).where(events.c.event_id.in_(bindparam("ids", expanding=True)))
        self.last_seq = select(func.coalesce(func.max(events.c.seq), 0)).where(
            events.c.stream_id == bindparam("stream")
        )
        self.heads = locking(
            select(tenant_heads)
            .where(tenant_heads.c.tenant_id.in_(bindparam("tenants", expanding=True)))
            .order_by(tenant_heads.c.tenant_id)  # one lock order for all writers: no deadlocks
        )
        self.insert = insert(events)
        self.set_head = (
            update(tenant_heads)
            .where(tenant_heads.c.tenant_id == bindparam("t_id"))
            .values(last_seq=bindparam("t_seq"), last_hash=bindparam("t_hash"))
        )
        pub = artifacts_published.c
        at = (pub.run_id == bindparam("run"), pub.path == bindparam("path"))
        newest = select(func.max(pub.version)).where(*at).scalar_subquery()
        # At most two rows: the publication of these bytes, and the newest version at the path.
        self.publication = select(artifacts_published).where(
            *at, or_(pub.sha256 == bindparam("digest"), pub.version == newest)
        )
        self.publish = insert(artifacts_published)
        self.read_stream = (
            select(events)
            .where(events.c.stream_id == bindparam("stream"), events.c.seq > bindparam("after"))
            .order_by(events.c.seq)
        )
