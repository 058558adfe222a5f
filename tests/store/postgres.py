"""A real PostgreSQL 15 server for the tests: initdb + pg_ctl in a temporary directory."""

from __future__ import annotations

import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest

from activities.store.migrate import upgrade
from workers.process.devserver import DevServerError
from workers.process.localpg import find_bindir, service_user
from workers.process.procs import free_port

_INSTALL_HINT = (
    "PostgreSQL 15 server binaries (initdb, pg_ctl) are required by the event store tests; "
    "install them, e.g. `apt-get install postgresql-15` (CI must run these tests, never skip)"
)


@dataclass(frozen=True)
class PostgresServer:
    port: int
    superuser: str = "postgres"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql+psycopg://{self.superuser}@127.0.0.1:{self.port}/{database}"

    def connect(self, database: str = "postgres") -> psycopg.Connection:
        return psycopg.connect(
            host="127.0.0.1", port=self.port, user=self.superuser, dbname=database, autocommit=True
        )


def _bindir() -> Path:
    try:
        return find_bindir()
    except DevServerError:
        pytest.fail(_INSTALL_HINT, pytrace=False)


def _run(argv: list[str], user: str | None, cwd: Path) -> None:
    command = ["runuser", "-u", user, "--", *argv] if user else argv
    done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(argv)} failed ({done.returncode}):\n{done.stdout}{done.stderr}"
        )


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the session on a free loopback port; removed afterwards."""
    bindir = _bindir()
    user = service_user()
    # Not under pytest's tmp_path: that lives in a 0700 root directory the server user
    # could not enter.
    root = Path(tempfile.mkdtemp(prefix="forge-pg-"))
    data, sockets, log = root / "data", root / "sock", root / "server.log"
    sockets.mkdir()
    if user:
        info = pwd.getpwnam(user)
        for path in (root, sockets):
            os.chown(path, info.pw_uid, info.pw_gid)
    port = free_port()
    try:
        _run(
            [
                str(bindir / "initdb"),
                "-D",
                str(data),
                "-U",
                "postgres",
                "--auth=trust",
                "--encoding=UTF8",
                "--no-sync",
            ],
            user,
            root,
        )
        options = (
            f"-p {port} -k {sockets} -c listen_addresses=127.0.0.1 "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        )
        start = [str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-o", options]
        try:
            _run([*start, "-w", "-t", "60", "start"], user, root)
        except RuntimeError as exc:
            server_log = log.read_text(errors="replace") if log.exists() else "(no log)"
            raise RuntimeError(f"{exc}\nserver log:\n{server_log}") from None
        yield PostgresServer(port=port)
    finally:
        try:
            # The pid file exists exactly while a server may be running from this directory.
            if (data / "postmaster.pid").exists():
                _run(
                    [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                    user,
                    root,
                )
        finally:
            shutil.rmtree(root, ignore_errors=True)


def create_database(server: PostgresServer) -> str:
    """A new empty database; returns its name."""
    name = f"forge_{uuid.uuid4().hex}"
    with server.connect() as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return name


def drop_database(server: PostgresServer, name: str) -> None:
    with server.connect() as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="class")
def postgres_database_url(postgres_server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database per test class."""
    name = create_database(postgres_server)
    yield postgres_server.url(name)
    drop_database(postgres_server, name)


@dataclass(frozen=True)
class RlsDatabase:
    server: PostgresServer
    database: str
    owner: str
    app: str

    def url(self, role: str) -> str:
        return f"postgresql+psycopg://{role}@127.0.0.1:{self.server.port}/{self.database}"

    @property
    def owner_url(self) -> str:
        return self.url(self.owner)

    @property
    def app_url(self) -> str:
        return self.url(self.app)


@contextmanager
def two_role_database(server: PostgresServer) -> Iterator[RlsDatabase]:
    """A database migrated by its owner role, with an app role granted by `upgrade`.

    The two roles of docs/isolation.md: a schema owner, and an application role (NOSUPERUSER,
    NOBYPASSRLS, owning nothing) granted by `upgrade` as `forge db upgrade` does with
    FORGE_DATABASE_OWNER_URL.

    Roles are global to the server: each database gets its own pair, dropped with it.
    """
    suffix = uuid.uuid4().hex[:12]
    db = RlsDatabase(server, f"forge_rls_{suffix}", f"forge_owner_{suffix}", f"forge_app_{suffix}")
    with server.connect() as conn:
        conn.execute(f'CREATE ROLE "{db.owner}" LOGIN NOSUPERUSER')
        conn.execute(f'CREATE ROLE "{db.app}" LOGIN NOSUPERUSER NOBYPASSRLS')
        conn.execute(f'CREATE DATABASE "{db.database}" OWNER "{db.owner}"')
    try:
        upgrade(db.owner_url, grant_to=db.app)
        yield db
    finally:
        with server.connect() as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{db.database}" WITH (FORCE)')
            conn.execute(f'DROP ROLE IF EXISTS "{db.app}"')
            conn.execute(f'DROP ROLE IF EXISTS "{db.owner}"')
