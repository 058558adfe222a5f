"""`forge doctor`'s store checks on real servers: PostgreSQL roles under row security, S3, disk."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.store.postgres import (
    PostgresServer,
    RlsDatabase,
    create_database,
    drop_database,
    postgres_server,
    two_role_database,
)
from tests.store.s3 import CREDENTIALS, moto_endpoint, use_test_credentials
from workers.services.doctor_stores import artifacts_check, database_check
from workers.settings import Settings

__all__ = ["moto_endpoint", "postgres_server"]


@pytest.fixture
def rls(postgres_server: PostgresServer) -> Iterator[RlsDatabase]:
    with two_role_database(postgres_server) as db:
        yield db


def _settings(tmp_path: Path, **values: str) -> Settings:
    return Settings(home=tmp_path / "home", **values)


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_sqlite_is_one_line_saying_what_it_is(tmp_path: Path) -> None:
    check = database_check(_settings(tmp_path))
    assert check.ok
    assert check.detail.startswith(f"SQLite at {tmp_path / 'home' / 'forge.db'}")


def test_the_app_role_under_row_security_passes(rls: RlsDatabase, tmp_path: Path) -> None:
    check = database_check(_settings(tmp_path, database_url=rls.app_url))
    assert check.ok, check
    assert f"as '{rls.app}'" in check.detail


def test_the_owner_as_the_app_role_fails(rls: RlsDatabase, tmp_path: Path) -> None:
    check = database_check(_settings(tmp_path, database_url=rls.owner_url))
    assert not check.ok
    assert f"the application role '{rls.owner}' owns" in check.detail
    assert check.fix is not None and "FORGE_DATABASE_OWNER_URL" in check.fix


@pytest.mark.parametrize("attribute", ["SUPERUSER", "BYPASSRLS"])
def test_an_app_role_that_bypasses_row_security_fails(
    rls: RlsDatabase, postgres_server: PostgresServer, tmp_path: Path, attribute: str
) -> None:
    with postgres_server.connect() as conn:
        conn.execute(f'ALTER ROLE "{rls.app}" {attribute}')
    check = database_check(_settings(tmp_path, database_url=rls.app_url))
    assert not check.ok
    assert "is a superuser or has BYPASSRLS" in check.detail
    assert check.fix is not None and "NOSUPERUSER NOBYPASSRLS" in check.fix


def test_a_table_with_row_security_switched_off_fails(
    rls: RlsDatabase, postgres_server: PostgresServer, tmp_path: Path
) -> None:
    with postgres_server.connect(rls.database) as conn:
        conn.execute("ALTER TABLE events NO FORCE ROW LEVEL SECURITY")
    check = database_check(_settings(tmp_path, database_url=rls.app_url))
    assert not check.ok
    assert check.detail.endswith("with the tenant policy, on events")
    assert check.fix is not None and "forge db upgrade" in check.fix


def test_a_database_without_forge_tables_fails(
    postgres_server: PostgresServer, tmp_path: Path
) -> None:
    name = create_database(postgres_server)
    try:
        check = database_check(_settings(tmp_path, database_url=postgres_server.url(name)))
    finally:
        drop_database(postgres_server, name)
    assert not check.ok
    assert "has no Forge tables" in check.detail
    assert check.fix is not None and "forge db upgrade" in check.fix


def test_an_unreachable_server_fails_naming_it(tmp_path: Path) -> None:
    port = _dead_port()
    url = f"postgresql+psycopg://forge_app:s3cret-pw@127.0.0.1:{port}/forge"
    check = database_check(_settings(tmp_path, database_url=url))
    assert not check.ok
    assert check.detail.startswith(
        f"cannot use PostgreSQL at 127.0.0.1:{port}/forge as 'forge_app'"
    )
    assert "s3cret-pw" not in check.detail
    assert check.fix is not None and "FORGE_DATABASE_URL" in check.fix


def test_an_s3_bucket_is_written_and_a_missing_one_fails(
    moto_endpoint: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from activities.store.artifacts_s3 import s3_client

    use_test_credentials(monkeypatch)
    client = s3_client(moto_endpoint, **CREDENTIALS)
    client.create_bucket(Bucket="forge-doctor-ok")
    good = artifacts_check(
        _settings(tmp_path, artifacts_url="s3://forge-doctor-ok/runs", s3_endpoint=moto_endpoint)
    )
    assert good.ok, good
    # The probe object was deleted again: the bucket holds nothing.
    assert client.list_objects_v2(Bucket="forge-doctor-ok").get("KeyCount") == 0
    missing = artifacts_check(
        _settings(tmp_path, artifacts_url="s3://forge-doctor-none/runs", s3_endpoint=moto_endpoint)
    )
    assert not missing.ok
    assert missing.detail == f"bucket 'forge-doctor-none' does not exist at {moto_endpoint}"
    assert missing.fix is not None and "FORGE_ARTIFACTS_URL" in missing.fix


def test_a_local_directory_is_written_and_an_unusable_one_fails(tmp_path: Path) -> None:
    good = artifacts_check(_settings(tmp_path))
    assert good.ok, good
    assert list((tmp_path / "home" / "artifacts").iterdir()) == []  # the probe was removed
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory", encoding="utf-8")
    bad = artifacts_check(_settings(tmp_path, artifacts_url=str(blocker / "artifacts")))
    assert not bad.ok
    assert bad.detail.startswith(f"the local artifact directory {blocker / 'artifacts'} is not")
    assert bad.fix is not None and "FORGE_ARTIFACTS_URL" in bad.fix
