"""`forge db upgrade` with FORGE_DATABASE_OWNER_URL: migrate as the owner, grant the app role."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import typer
from click.testing import Result
from typer.testing import CliRunner

from tests.store.postgres import PostgresServer, postgres_server
from workers.cli.events import db_app, events_app

__all__ = ["postgres_server"]

Invoke = Callable[..., Result]


@pytest.fixture
def forge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Invoke:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")
    app = typer.Typer()
    app.add_typer(events_app, name="events")
    app.add_typer(db_app, name="db")
    runner = CliRunner()
    return lambda *args: runner.invoke(app, list(args))


@pytest.fixture
def roles(postgres_server: PostgresServer) -> Iterator[tuple[str, str, Callable[[str], str]]]:
    """An owner role, an app role and a database the owner owns (nothing migrated yet)."""
    suffix = uuid.uuid4().hex[:12]
    owner, app, name = f"cli_owner_{suffix}", f"cli_app_{suffix}", f"cli_{suffix}"
    with postgres_server.connect() as conn:
        conn.execute(f'CREATE ROLE "{owner}" LOGIN')
        conn.execute(f'CREATE ROLE "{app}" LOGIN NOBYPASSRLS')
        conn.execute(f'CREATE DATABASE "{name}" OWNER "{owner}"')

    def url(role: str) -> str:
        return f"postgresql+psycopg://{role}@127.0.0.1:{postgres_server.port}/{name}"

    yield owner, app, url
    with postgres_server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{app}"')
        conn.execute(f'DROP ROLE IF EXISTS "{owner}"')


def test_upgrade_as_the_owner_grants_the_app_role(
    forge: Invoke, roles: tuple[str, str, Callable[[str], str]], monkeypatch: pytest.MonkeyPatch
) -> None:
    owner, app, url = roles
    monkeypatch.setenv("FORGE_DATABASE_OWNER_URL", url(owner))
    monkeypatch.setenv("FORGE_DATABASE_URL", url(app))
    for _ in range(2):  # repeatable: grants again, migrates nothing
        result = forge("db", "upgrade")
        assert result.exit_code == 0, result.output
        assert "revision 0011" in result.output
        assert f"role {app} granted every table" in result.output
    # The app role opens the store and, through forge_event_tenants(), lists no tenant.
    verified = forge("events", "verify")
    assert verified.exit_code == 0, verified.output
    assert "The event log is empty" in verified.output


def test_an_app_role_that_bypasses_row_security_is_refused(
    forge: Invoke,
    roles: tuple[str, str, Callable[[str], str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    owner, _, url = roles
    monkeypatch.setenv("FORGE_DATABASE_OWNER_URL", url(owner))
    monkeypatch.setenv("FORGE_DATABASE_URL", url("postgres"))  # the test server's superuser
    result = forge("db", "upgrade")
    assert result.exit_code == 2, result.output
    assert "superuser or has BYPASSRLS" in result.output


def test_an_owner_url_needs_postgres_on_both_sides(
    forge: Invoke, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGE_DATABASE_OWNER_URL", f"sqlite:///{tmp_path / 'f.db'}")
    result = forge("db", "upgrade")
    assert result.exit_code == 2, result.output
    assert "FORGE_DATABASE_OWNER_URL" in result.output and "SQLite" in result.output
    monkeypatch.setenv("FORGE_DATABASE_OWNER_URL", "postgresql+psycopg://o@127.0.0.1:1/forge")
    monkeypatch.setenv("FORGE_DATABASE_URL", f"sqlite:///{tmp_path / 'f.db'}")
    result = forge("db", "upgrade")
    assert result.exit_code == 2, result.output
    assert "FORGE_DATABASE_URL is not PostgreSQL" in result.output
