"""A tenant's webhooks (issue 19 §1) and, for each, how far into the tenant's log it has heard.

A webhook's `cursor` is the tenant_seq of the last event handed to it for delivery. It starts
at the tenant's head when the webhook is registered (kept as `from_seq`), so a new webhook hears
what the log records from then on, never the tenant's history: the log position decides, not
an event's timestamp, which its writer stamps a moment before the log takes it. The dispatcher
(workers/process/webhook_dispatch.py) moves the cursor forward only, after it started the
deliveries up to there. Removing a webhook stamps `deleted_at`: it stops hearing, and its record
and its deliveries stay readable.
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Engine, insert, select, text, update

from activities.store.migrate import open_migrated
from activities.store.records import utc
from activities.store.tables import tenant_heads, webhooks
from activities.store.tenancy import scoped
from compiler.egress import request_target
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.scope import Actor
from schemas.webhooks import WEBHOOK_EVENTS, Webhook

__all__ = [
    "WebhookStore",
    "check_webhook_url",
    "open_webhook_store",
]

_W = webhooks.c
_LIVE_PG = text("SELECT * FROM forge_live_webhooks()")


def check_webhook_url(url: str) -> str:
    """`url` if Forge can judge where it goes (http or https, a host, no credentials)."""
    target = request_target(url)
    if isinstance(target, str):
        raise ForgeError(
            f"webhook URL refused: {target}",
            code=ErrorCode.WEBHOOK_INVALID,
            hint="give an http:// or https:// URL with a host name or IP, e.g. "
            "https://hooks.example.com/forge",
        )
    return url


class WebhookStore:
    """Webhooks of every tenant, each with its delivery cursor."""

    def __init__(self, engine: Engine) -> None:
        self._engine = engine

    def close(self) -> None:
        """Release pooled connections."""
        self._engine.dispose()

    def __enter__(self) -> WebhookStore:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()

    def create(self, tenant_id: str, url: str, events: Sequence[str], actor: Actor) -> Webhook:
        """Register a webhook; it hears the tenant's events from now on."""
        check_webhook_url(url)
        unknown = sorted(set(events) - set(WEBHOOK_EVENTS))
        if unknown or not events:
            raise ForgeError(
                f"webhook events {unknown or '(none)'} cannot be delivered",
                code=ErrorCode.WEBHOOK_INVALID,
                hint=f"name one or more of {', '.join(WEBHOOK_EVENTS)}",
            )
        webhook = Webhook(
            webhook_id=f"wh_{secrets.token_hex(8)}",
            tenant_id=tenant_id,
            url=url,
            events=sorted(set(events)),
            created_at=datetime.now(UTC),
            created_by=actor,
        )
        with scoped(self._engine, tenant_id, write=True) as conn:
            # The head row locked as an append locks it: an event in flight is either in the
            # log before this read (history, not heard) or after it (heard), never both.
            head = conn.execute(
                select(tenant_heads.c.last_seq)
                .where(tenant_heads.c.tenant_id == tenant_id)
                .with_for_update()
            ).scalar()
            webhook = webhook.model_copy(update={"from_seq": head or 0})
            conn.execute(
                insert(webhooks).values(
                    webhook_id=webhook.webhook_id,
                    tenant_id=tenant_id,
                    url=url,
                    events=list(webhook.events),
                    created_at=webhook.created_at,
                    created_by=actor.model_dump(mode="json"),
                    deleted_at=None,
                    cursor=head or 0,
                    from_seq=head or 0,
                )
            )
        return webhook

    def webhooks(self, tenant_id: str, *, deleted: bool = False) -> list[Webhook]:
        """The tenant's webhooks, newest first (removed ones too if `deleted`)."""
        query = select(webhooks).where(_W.tenant_id == tenant_id)
        if not deleted:
            query = query.where(_W.deleted_at.is_(None))
        with scoped(self._engine, tenant_id) as conn:
            rows = conn.execute(query.order_by(_W.created_at.desc(), _W.webhook_id)).mappings()
            return [_webhook(r) for r in rows]

    def get(self, tenant_id: str, webhook_id: str) -> Webhook:
        """The tenant's webhook (a removed one too, with its deleted_at), or NOT_FOUND."""
        with scoped(self._engine, tenant_id) as conn:
            row = (
                conn.execute(
                    select(webhooks).where(_W.tenant_id == tenant_id, _W.webhook_id == webhook_id)
                )
                .mappings()
                .first()
            )
        if row is None:
            raise ForgeError(
                f"no webhook {webhook_id!r}",
                code=ErrorCode.NOT_FOUND,
                hint="list the tenant's webhooks: GET /v1/webhooks or `forge webhooks list`",
            )
        return _webhook(row)

    def delete(self, tenant_id: str, webhook_id: str) -> Webhook:
        """Remove the tenant's webhook: it hears nothing more (again is a no-op)."""
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(
                update(webhooks)
                .where(
                    _W.tenant_id == tenant_id,
                    _W.webhook_id == webhook_id,
                    _W.deleted_at.is_(None),
                )
                .values(deleted_at=datetime.now(UTC))
            )
        return self.get(tenant_id, webhook_id)

    def live(self) -> list[tuple[Webhook, int]]:
        """Every tenant's live webhooks with their cursors, oldest first.

        The one cross-tenant read of webhooks (the dispatcher's): on PostgreSQL it goes through
        the SECURITY DEFINER function forge_live_webhooks() of migration 0008.
        """
        with self._engine.connect() as conn:
            if conn.dialect.name == "postgresql":
                rows = conn.execute(_LIVE_PG).mappings()
            else:
                query = select(webhooks).where(_W.deleted_at.is_(None))
                rows = conn.execute(query.order_by(_W.created_at, _W.webhook_id)).mappings()
            return [(_webhook(r), int(r["cursor"])) for r in rows]

    def advance(self, tenant_id: str, webhook_id: str, cursor: int) -> None:
        """Move the tenant's webhook's cursor to `cursor`, never back (a slower poller: no-op)."""
        with scoped(self._engine, tenant_id, write=True) as conn:
            conn.execute(
                update(webhooks)
                .where(_W.tenant_id == tenant_id, _W.webhook_id == webhook_id, _W.cursor < cursor)
                .values(cursor=cursor)
            )


def open_webhook_store(database_url: str) -> WebhookStore:
    """The webhooks in the database at `database_url` (SQLite migrated on open).

    Raises:
        StoreError: SCHEMA_NOT_MIGRATED, a PostgreSQL database is missing migrations
            (run `forge db upgrade`).
    """
    return WebhookStore(open_migrated(database_url))


def _webhook(row: Mapping[Any, Any]) -> Webhook:
    return Webhook(
        webhook_id=row["webhook_id"],
        tenant_id=row["tenant_id"],
        url=row["url"],
        events=list(row["events"]),
        created_at=utc(row["created_at"]),
        created_by=Actor.model_validate(row["created_by"]),
        deleted_at=utc(row["deleted_at"]) if row["deleted_at"] else None,
        from_seq=row.get("from_seq"),
    )
