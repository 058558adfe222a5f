"""Migration 0011: webhooks record the log position they were registered at (`from_seq`)."""

from __future__ import annotations

from datetime import UTC, datetime

from sqlalchemy import Engine, insert

from activities.store.migrate import upgrade_engine
from activities.store.tables import webhooks
from activities.store.webhooks import WebhookStore
from schemas.scope import Actor
from tests.store.test_migration_0008 import engine  # noqa: F401  (the sqlite/postgres fixture)
from tests.store.test_migration_0010 import _at

ANA = Actor(id="ana", name="ana", role="admin", kind="human")


def test_an_older_webhook_keeps_hearing_with_no_position_and_a_new_one_has_it(
    engine: Engine,  # noqa: F811
) -> None:
    _at(engine, "0010")
    with engine.begin() as conn:  # the columns 0010 has: from_seq is not one of them
        conn.execute(
            insert(webhooks).values(
                webhook_id="wh_00000000000000aa",
                tenant_id="acme",
                url="https://hooks.example.com/forge",
                events=["run.failed.v1"],
                created_at=datetime(2026, 1, 1, tzinfo=UTC),
                created_by=ANA.model_dump(mode="json"),
                deleted_at=None,
                cursor=7,
            )
        )
    upgrade_engine(engine)
    store = WebhookStore(engine)
    (found, cursor), *_ = store.live()  # on PostgreSQL, through forge_live_webhooks()
    assert (found.webhook_id, found.from_seq, cursor) == ("wh_00000000000000aa", None, 7)
    made = store.create("acme", "https://hooks.example.com/new", ["run.failed.v1"], ANA)
    assert made.from_seq == 0 and store.get("acme", made.webhook_id).from_seq == 0
