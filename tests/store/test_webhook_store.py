"""Webhooks and their delivery cursors, on SQLite and a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest

from activities.store.events import EventStore, open_event_store
from activities.store.migrate import upgrade
from activities.store.webhooks import WebhookStore, open_webhook_store
from schemas.error_codes import ErrorCode
from schemas.events import EventDraft
from schemas.scope import Actor, Scope
from tests.support.errors import raises_code

ADMIN = Actor(id="acme-admin", name="Acme admin", role="admin", kind="system")
URL = "https://hooks.example.com/forge"


def append(events: EventStore, tenant: str, n: int, type_: str) -> int:
    """Append one event of `type_` to the tenant; its place in the tenant's chain."""
    draft = EventDraft(
        event_id=f"{tenant}:{type_}:{n}",
        type=type_,
        scope=Scope(tenant=tenant),
        run_id=f"{tenant}-run",
        caused_by=None if type_ == "run.started.v1" else f"{tenant}:cause",
        timestamp=datetime.now(UTC),
        payload={"n": n},
    )
    events.append([draft], stream_id=f"{tenant}-run:run")
    return events.page(tenant, newest_first=True, limit=1)[0][0]


class WebhookContract:
    @pytest.fixture
    def hooks(self, database_url: str) -> Iterator[WebhookStore]:
        store = open_webhook_store(database_url)
        yield store
        store.close()

    @pytest.fixture
    def events(self, database_url: str) -> Iterator[EventStore]:
        store = open_event_store(database_url)
        yield store
        store.close()

    def test_a_new_webhook_hears_from_now_on_never_history(
        self, hooks: WebhookStore, events: EventStore
    ) -> None:
        append(events, "t-new", 1, "run.started.v1")
        head = append(events, "t-new", 2, "run.completed.v1")
        made = hooks.create("t-new", URL, ["run.completed.v1", "gate.requested.v1"], ADMIN)
        assert made.webhook_id.startswith("wh_") and made.events == [
            "gate.requested.v1",
            "run.completed.v1",
        ]
        cursors = {w.webhook_id: c for w, c in hooks.live()}
        assert cursors[made.webhook_id] == head
        later = append(events, "t-new", 3, "run.completed.v1")
        append(events, "t-new", 4, "run.failed.v1")  # not a type it hears
        heard = events.page("t-new", types=made.events, after=head)
        assert [seq for seq, _ in heard] == [later]

    def test_the_log_position_decides_what_it_hears_not_the_timestamp(
        self, hooks: WebhookStore, events: EventStore
    ) -> None:
        head = append(events, "t-pos", 1, "run.started.v1")
        made = hooks.create("t-pos", URL, ["run.completed.v1"], ADMIN)
        assert made.from_seq == head and hooks.get("t-pos", made.webhook_id).from_seq == head
        # Stamped before the webhook existed, taken by the log after: it is heard, and says so.
        late = EventDraft(
            event_id="t-pos:late",
            type="run.completed.v1",
            scope=Scope(tenant="t-pos"),
            run_id="t-pos-run",
            caused_by="t-pos:cause",
            timestamp=made.created_at - timedelta(milliseconds=16),
            payload={},
        )
        events.append([late], stream_id="t-pos-run:run")
        heard = events.page("t-pos", types=made.events, after=made.from_seq)
        assert [e.event_id for _, e in heard] == ["t-pos:late"]
        hooks.advance("t-pos", made.webhook_id, heard[-1][0])
        assert hooks.get("t-pos", made.webhook_id).from_seq == head  # the cursor moved, not it

    def test_a_webhook_in_a_tenant_without_events_starts_at_zero(self, hooks: WebhookStore) -> None:
        made = hooks.create("t-empty", URL, ["run.failed.v1"], ADMIN)
        assert dict((w.webhook_id, c) for w, c in hooks.live())[made.webhook_id] == 0

    def test_a_url_or_events_it_cannot_deliver_are_refused(self, hooks: WebhookStore) -> None:
        with raises_code(ErrorCode.WEBHOOK_INVALID, match="scheme 'ftp'"):
            hooks.create("t-bad", "ftp://example.com/x", ["run.failed.v1"], ADMIN)
        with raises_code(ErrorCode.WEBHOOK_INVALID, match="credentials"):
            hooks.create("t-bad", "https://u:p@example.com/x", ["run.failed.v1"], ADMIN)
        with raises_code(ErrorCode.WEBHOOK_INVALID, match=r"step\.completed\.v1"):
            hooks.create("t-bad", URL, ["step.completed.v1"], ADMIN)
        with raises_code(ErrorCode.WEBHOOK_INVALID, match="none"):
            hooks.create("t-bad", URL, [], ADMIN)
        assert hooks.webhooks("t-bad") == []

    def test_another_tenants_webhook_is_not_found_and_cannot_be_removed(
        self, hooks: WebhookStore
    ) -> None:
        made = hooks.create("t-own", URL, ["run.failed.v1"], ADMIN)
        with raises_code(ErrorCode.NOT_FOUND, match=made.webhook_id):
            hooks.get("t-other", made.webhook_id)
        with raises_code(ErrorCode.NOT_FOUND):
            hooks.delete("t-other", made.webhook_id)
        assert hooks.get("t-own", made.webhook_id) == made
        assert hooks.webhooks("t-other") == []

    def test_a_removed_webhook_stops_hearing_and_stays_readable(self, hooks: WebhookStore) -> None:
        first = hooks.create("t-del", URL, ["run.failed.v1"], ADMIN)
        second = hooks.create("t-del", URL + "/2", ["run.completed.v1"], ADMIN)
        assert [w.webhook_id for w in hooks.webhooks("t-del")] == [
            second.webhook_id,
            first.webhook_id,
        ]
        removed = hooks.delete("t-del", first.webhook_id)
        assert removed.deleted_at is not None
        assert hooks.delete("t-del", first.webhook_id).deleted_at == removed.deleted_at
        assert [w.webhook_id for w in hooks.webhooks("t-del")] == [second.webhook_id]
        assert len(hooks.webhooks("t-del", deleted=True)) == 2
        assert first.webhook_id not in {w.webhook_id for w, _ in hooks.live()}
        assert hooks.get("t-del", first.webhook_id).deleted_at == removed.deleted_at

    def test_a_cursor_only_moves_forward(self, hooks: WebhookStore) -> None:
        made = hooks.create("t-cursor", URL, ["run.failed.v1"], ADMIN)
        hooks.advance("t-cursor", made.webhook_id, 7)
        hooks.advance("t-cursor", made.webhook_id, 3)  # a slower poller's older page
        assert dict((w.webhook_id, c) for w, c in hooks.live())[made.webhook_id] == 7


class TestSqlite(WebhookContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, tmp_path_factory: pytest.TempPathFactory) -> str:
        return f"sqlite:///{tmp_path_factory.mktemp('webhooks') / 'forge.db'}"


class TestPostgres(WebhookContract):
    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_database_url: str) -> str:
        upgrade(postgres_database_url)
        return postgres_database_url


class TestPostgresAppRole(WebhookContract):
    """As TestPostgres, connected as the application role row-level security holds."""

    @pytest.fixture(scope="class")
    @classmethod
    def database_url(cls, postgres_app_database_url: str) -> str:
        return postgres_app_database_url
