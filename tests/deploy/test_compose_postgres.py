"""forge-postgres's init script and the forge-migrate one-shot, on a real PostgreSQL server.

The script runs as the postgres image runs it (sh, psql as POSTGRES_USER), with the URLs of
deploy/forge.env.example pointed at the test server; then `forge db upgrade` migrates as the
owner and grants the application role, as the one-shot does.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.deploy import compose
from tests.store.postgres import PostgresServer, postgres_server
from workers.process.localpg import APP_ROLE, OWNER_ROLE

__all__ = ["postgres_server"]

_SCRIPT = compose.ROOT / "deploy" / "postgres" / "init-forge-roles.sh"
_COMPOSE_HOST = "forge-postgres:5432"


@pytest.fixture
def server(postgres_server: PostgresServer) -> Iterator[PostgresServer]:
    # The script's names are fixed (the compose database is the server's only one): drop them
    # afterwards so the session's server stays clean.
    yield postgres_server
    with postgres_server.connect() as conn:
        conn.execute('DROP DATABASE IF EXISTS "forge" WITH (FORCE)')
        conn.execute(f'DROP ROLE IF EXISTS "{APP_ROLE}"')
        conn.execute(f'DROP ROLE IF EXISTS "{OWNER_ROLE}"')


def _env(server: PostgresServer, home: Path) -> dict[str, str]:
    here = f"127.0.0.1:{server.port}"
    env = {k: v.replace(_COMPOSE_HOST, here) for k, v in compose.read_env().items()}
    env["FORGE_HOME"] = str(home)
    return {"PATH": os.environ["PATH"], **env}


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)


def test_init_script_and_migrate_make_the_two_roles(server: PostgresServer, tmp_path: Path) -> None:
    env = _env(server, tmp_path / "home")
    script_env = {**env, "POSTGRES_USER": "postgres", "PGHOST": "127.0.0.1"}
    script_env["PGPORT"] = str(server.port)
    done = _run(["sh", str(_SCRIPT)], script_env)
    assert done.returncode == 0, done.stderr
    with server.connect() as conn:
        roles = dict(
            (name, (superuser, bypass, password is not None))
            for name, superuser, bypass, password in conn.execute(
                "SELECT rolname, rolsuper, rolbypassrls, rolpassword FROM pg_authid "
                "WHERE rolname = ANY(%s)",
                ([OWNER_ROLE, APP_ROLE],),
            ).fetchall()
        )
        owner = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'forge'"
        ).fetchone()
    assert roles == {OWNER_ROLE: (False, False, True), APP_ROLE: (False, False, True)}
    assert owner == (OWNER_ROLE,)

    migrate = _run([sys.executable, "-m", "workers.cli", "db", "upgrade"], env)
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr
    assert f"role {APP_ROLE} granted" in migrate.stdout
    with server.connect("forge") as conn:
        owners = {
            o
            for (o,) in conn.execute("SELECT tableowner FROM pg_tables WHERE schemaname = 'public'")
        }
    assert owners == {OWNER_ROLE}


def test_init_script_refuses_a_url_without_password(server: PostgresServer, tmp_path: Path) -> None:
    env = _env(server, tmp_path / "home")
    env["FORGE_DATABASE_URL"] = f"postgresql+psycopg://{APP_ROLE}@127.0.0.1:{server.port}/forge"
    done = _run(["sh", str(_SCRIPT)], {**env, "POSTGRES_USER": "postgres"})
    assert done.returncode == 1
    assert "must each hold a password" in done.stderr
    with server.connect() as conn:
        assert (
            conn.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (APP_ROLE,)).fetchone()
            is None
        )
