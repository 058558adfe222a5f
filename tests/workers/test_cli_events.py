"""`forge events list/verify` and `forge db upgrade` as a person (or a script) runs them."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import pytest
import typer
from click.testing import Result
from sqlalchemy import update
from typer.testing import CliRunner

from activities.store.events import open_event_store
from activities.store.tables import events
from schemas.events import EventDraft
from tests.store.postgres import (
    PostgresServer,
    create_database,
    drop_database,
    postgres_server,
)
from workers.cli.events import db_app, events_app

__all__ = ["postgres_server"]  # the session fixture, used by the PostgreSQL test below

Invoke = Callable[..., Result]
T0 = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)


def _app() -> typer.Typer:
    # Mounted the way workers/cli/ mounts them, so command paths match `forge events ...`.
    app = typer.Typer()
    app.add_typer(events_app, name="events")
    app.add_typer(db_app, name="db")
    return app


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")
    monkeypatch.delenv("FORGE_DATABASE_URL", raising=False)
    return tmp_path / "home"


@pytest.fixture
def forge(home: Path) -> Invoke:
    runner = CliRunner()

    def invoke(*args: str) -> Result:
        return runner.invoke(_app(), list(args))

    return invoke


def _seed(url: str) -> None:
    def ev(tenant: str, n: int, run: str, type_: str = "step.completed.v1") -> EventDraft:
        cause = None if type_ == "run.started.v1" else f"{tenant}-0"
        return EventDraft(
            event_id=f"{tenant}-{n}",
            type=type_,
            tenant_id=tenant,
            run_id=run,
            caused_by=cause,
            timestamp=T0,
            payload={"n": n},
        )

    with open_event_store(url) as store:
        store.append(
            [
                ev("acme", 0, "run-1", "run.started.v1"),
                ev("acme", 1, "run-1"),
                ev("acme", 2, "run-1"),
            ],
            stream_id="run-1",
        )
        store.append([ev("globex", 0, "run-2", "run.started.v1")], stream_id="run-2")


def ids(result: Result) -> list[str]:
    assert result.exit_code == 0, result.output
    return [e["event_id"] for e in json.loads(result.output)["events"]]


def test_list_and_filters(forge: Invoke, home: Path) -> None:
    _seed(f"sqlite:///{home / 'forge.db'}")
    result = forge("events", "list")
    assert result.exit_code == 0, result.output
    assert "4 event(s)" in result.output and "run.started.v1" in result.output
    assert ids(forge("events", "list", "--json")) == ["acme-0", "acme-1", "acme-2", "globex-0"]
    assert ids(forge("events", "list", "--run", "run-2", "--json")) == ["globex-0"]
    only = forge("events", "list", "--run", "run-2")
    assert "1 event(s) of run-2 · tenant globex" in only.output and "acme" not in only.output
    typed = forge("events", "list", "--type", "run.started.v1", "--tenant", "acme", "--json")
    assert ids(typed) == ["acme-0"]
    assert len(ids(forge("events", "list", "--limit", "2", "--json"))) == 2
    wide = forge("events", "list", "--wide")
    assert "acme-2" in wide.output and "caused by" in wide.output
    assert "No events match" in forge("events", "list", "--run", "nope").output
    assert ids(forge("events", "list", "--run", "nope", "--json")) == []


def test_the_list_reads_at_80_columns(forge: Invoke, home: Path, monkeypatch) -> None:
    # The old table put seven columns into 80: every cell wrapped mid-word, unreadable.
    monkeypatch.setenv("COLUMNS", "80")
    run = "run-20261123-075717-2a1000"
    steps = ["normalize_sources", "contract_applicability", "find_discrepancies"]
    drafts = [
        EventDraft(
            event_id=f"{run}:run.started.v1",
            type="run.started.v1",
            run_id=run,
            timestamp=T0,
            payload={},
        )
    ]
    for key in steps:
        drafts.append(
            EventDraft(
                event_id=f"{run}:step.completed.v1:{key}",
                type="step.completed.v1",
                run_id=run,
                caused_by=drafts[0].event_id,
                timestamp=T0,
                payload={"step_key": key},
            )
        )
    with open_event_store(f"sqlite:///{home / 'forge.db'}") as store:
        store.append(drafts[:1], stream_id=run)
        for key, draft in zip(steps, drafts[1:], strict=True):
            store.append([draft], stream_id=f"{run}:step:{key}")
    shown = forge("events", "list", "--run", run)
    assert shown.exit_code == 0, shown.output
    lines = shown.output.splitlines()
    assert max(len(line) for line in lines) <= 80
    for key in steps:  # each row on one line: its time, type, stream and seq whole
        row = next(line for line in lines if f"step:{key} " in line)
        assert row.split() == ["12:00:00", "step.completed.v1", f"step:{key}", "1"]
    assert f"4 event(s) of {run} · 2025-03-01 UTC" in shown.output


def test_verify_exits_0_when_intact_and_1_naming_the_break(forge: Invoke, home: Path) -> None:
    url = f"sqlite:///{home / 'forge.db'}"
    assert "nothing to verify" in forge("events", "verify").output
    _seed(url)
    intact = forge("events", "verify")
    assert intact.exit_code == 0, intact.output
    assert "4 event(s) verified" in intact.output
    with open_event_store(url) as store, store.engine.begin() as conn:
        conn.execute(update(events).where(events.c.event_id == "acme-1").values(payload={"n": 9}))
    broken = forge("events", "verify")
    assert broken.exit_code == 1
    assert "tenant acme: chain broken at tenant_seq 2 (event acme-1)" in broken.output
    assert "globex" in broken.output and "intact" in broken.output
    assert forge("events", "verify", "--tenant", "globex").exit_code == 0
    assert forge("events", "verify", "--tenant", "acme").exit_code == 1


def test_db_upgrade_on_sqlite_is_repeatable(forge: Invoke, home: Path) -> None:
    for _ in range(2):
        result = forge("db", "upgrade")
        assert result.exit_code == 0, result.output
        assert "revision 0011" in result.output
    assert (home / "forge.db").is_file()


def test_invalid_database_url_exits_2(forge: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_DATABASE_URL", "mysql://db/forge")
    result = forge("events", "list")
    assert result.exit_code == 2
    assert "FORGE_DATABASE_URL" in result.output


def test_postgres_needs_db_upgrade_first(
    forge: Invoke, monkeypatch: pytest.MonkeyPatch, postgres_server: PostgresServer
) -> None:
    name = create_database(postgres_server)
    try:
        monkeypatch.setenv("FORGE_DATABASE_URL", postgres_server.url(name))
        refused = forge("events", "list")
        assert refused.exit_code == 2
        assert "forge db upgrade" in refused.output
        upgraded = forge("db", "upgrade")
        assert upgraded.exit_code == 0, upgraded.output
        _seed(postgres_server.url(name))
        assert forge("events", "verify").exit_code == 0
        assert "4 event(s)" in forge("events", "list").output
    finally:
        drop_database(postgres_server, name)


def test_unreachable_postgres_exits_2(forge: Invoke, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_DATABASE_URL", "postgresql+psycopg://forge@127.0.0.1:1/forge")
    result = forge("db", "upgrade")
    assert result.exit_code == 2
    assert "cannot migrate the database" in result.output


def test_types_lists_the_catalogue():
    runner = CliRunner()
    result = runner.invoke(_app(), ["events", "types", "--json"])
    assert result.exit_code == 0, result.output
    types = {t["type"]: t for t in json.loads(result.output)["types"]}
    assert types["step.completed.v1"]["payload"] == "StepCompleted"
    assert types["step.completed.v1"]["schema"]["title"] == "StepCompleted"
    assert len(types) == 41  # the run, step, gate, budget, tool, capsule, guard and webhook types
    table = runner.invoke(_app(), ["events", "types"], env={"COLUMNS": "200"})
    assert table.exit_code == 0 and "gate.decided.v1" in table.output
