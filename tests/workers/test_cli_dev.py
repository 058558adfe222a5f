from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from schemas.error_codes import ErrorCode
from tests.workers.test_cli_error_format import assert_one_error_line
from workers.cli.dev import dev_app
from workers.process import localpg


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "forge-home"))
    monkeypatch.setenv("COLUMNS", "200")  # one error line stays one line
    for name in (
        "FORGE_TEMPORAL_ADDRESS",
        "FORGE_DEV_PORT",
        "FORGE_NAMESPACE",
        "FORGE_DATABASE_URL",
        "FORGE_DATABASE_OWNER_URL",
        "FORGE_ARTIFACTS_URL",
        "FORGE_S3_ENDPOINT",
        "FORGE_DEPLOYMENT_NAME",
        "FORGE_BUILD_ID",
    ):
        monkeypatch.delenv(name, raising=False)
    return CliRunner()


def _app() -> typer.Typer:
    # Mounted the way workers/cli/ mounts it, so command paths match `forge dev ...`.
    app = typer.Typer()
    app.add_typer(dev_app, name="dev")
    return app


def test_status_exits_1_when_not_running(cli: CliRunner) -> None:
    result = cli.invoke(_app(), ["dev", "status"])
    assert result.exit_code == 1
    assert "not running" in result.output


def test_up_status_down_round_trip(cli: CliRunner) -> None:
    try:
        up = cli.invoke(_app(), ["dev", "up"])
        assert up.exit_code == 0, up.output
        assert "ready at 127.0.0.1:" in up.output
        status = cli.invoke(_app(), ["dev", "status"])
        assert status.exit_code == 0, status.output
        assert "running" in status.output
    finally:
        down = cli.invoke(_app(), ["dev", "down"])
    assert down.exit_code == 0
    assert "stopped" in down.output


def test_invalid_setting_exits_2_with_one_line(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGE_DEV_PORT", "abc")
    result = cli.invoke(_app(), ["dev", "up"])
    assert result.exit_code == 2
    assert "FORGE_DEV_PORT='abc'" in result.output
    assert "Traceback" not in result.output
    assert not isinstance(result.exception, ValueError)


def test_up_with_external_address_starts_nothing(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", "temporal.example:7233")
    result = cli.invoke(_app(), ["dev", "up"])
    assert result.exit_code == 0
    assert "temporal.example:7233" in result.output
    assert not (tmp_path / "forge-home").exists()


def test_status_json_says_not_running_and_exits_1(cli: CliRunner) -> None:
    result = cli.invoke(_app(), ["dev", "status", "--json"])
    assert result.exit_code == 1, result.output
    state = json.loads(result.output)
    assert state["running"] is False
    assert [(p["name"], p["alive"], p["pid"]) for p in state["processes"]] == [
        ("temporal", False, None)
    ]


@pytest.mark.parametrize(
    ("flags", "variable"),
    [
        (["--postgres"], "FORGE_DATABASE_URL"),
        (["--postgres"], "FORGE_DATABASE_OWNER_URL"),
        (["--s3"], "FORGE_ARTIFACTS_URL"),
        (["--s3"], "FORGE_S3_ENDPOINT"),
    ],
)
def test_a_flag_that_clashes_with_a_setting_is_one_line_and_starts_nothing(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, flags: list[str], variable: str
) -> None:
    values = {
        "FORGE_DATABASE_URL": "postgresql+psycopg://forge@db.example:5432/forge",
        "FORGE_DATABASE_OWNER_URL": "postgresql+psycopg://owner@db.example:5432/forge",
        "FORGE_ARTIFACTS_URL": "s3://acme-artifacts/forge/",
        "FORGE_S3_ENDPOINT": "http://minio.example:9000",
    }
    monkeypatch.setenv(variable, values[variable])
    result = cli.invoke(_app(), ["dev", "up", "--workers", "1", *flags])
    line = assert_one_error_line(result, ErrorCode.DEV_SERVER, variable)
    assert flags[0] in line and "unset" in line
    assert not (tmp_path / "forge-home" / "devserver.json").exists()
    assert not (tmp_path / "forge-home" / "topology.json").exists()


def test_an_external_temporal_address_clashes_with_the_topology(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", "temporal.example:7233")
    result = cli.invoke(_app(), ["dev", "up", "--workers", "2"])
    assert_one_error_line(result, ErrorCode.DEV_SERVER, "FORGE_TEMPORAL_ADDRESS")


@pytest.mark.parametrize(
    ("variable", "value"), [("FORGE_DEPLOYMENT_NAME", "forge"), ("FORGE_BUILD_ID", "2026.11.1")]
)
def test_worker_versioning_in_the_shell_is_refused_and_starts_nothing(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, variable: str, value: str
) -> None:
    # The workers would inherit it and register a version no one promotes: every run would wait.
    monkeypatch.setenv(variable, value)
    result = cli.invoke(_app(), ["dev", "up", "--workers", "2"])
    line = assert_one_error_line(result, ErrorCode.DEV_SERVER, f"{variable} is set")
    assert f"unset {variable}" in line
    assert "`forge worker` and `forge deploy promote`" in line
    assert "docs/deployment.md" in line
    assert not (tmp_path / "forge-home" / "devserver.json").exists()
    assert not (tmp_path / "forge-home" / "topology.json").exists()


def test_s3_without_moto_is_one_line_and_starts_nothing(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # This interpreter cannot import moto's server, as when moto is not installed.
    monkeypatch.setitem(sys.modules, "moto.server", None)
    result = cli.invoke(_app(), ["dev", "up", "--workers", "1", "--s3"])
    line = assert_one_error_line(result, ErrorCode.DEV_SERVER, "moto")
    assert "pip install 'moto[server]'" in line and "--s3" in line
    assert not (tmp_path / "forge-home" / "devserver.json").exists()


def test_a_missing_temporal_binary_is_one_line(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setattr(sys, "executable", str(empty / "python"))
    monkeypatch.setenv("PATH", str(empty))
    result = cli.invoke(_app(), ["dev", "up", "--workers", "1", "--api"])
    assert_one_error_line(result, ErrorCode.DEV_SERVER, "Temporal CLI not found")
    assert not (tmp_path / "forge-home" / "topology.json").exists()


def test_postgres_without_its_programs_is_one_line_and_starts_nothing(
    cli: CliRunner, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # A machine without PostgreSQL: neither PATH nor the distribution's directories hold it.
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    monkeypatch.setattr(localpg, "_BINDIRS", [empty])
    result = cli.invoke(_app(), ["dev", "up", "--workers", "1", "--postgres"])
    line = assert_one_error_line(result, ErrorCode.DEV_SERVER, "initdb and pg_ctl")
    assert "apt-get install postgresql" in line and "--postgres" in line
    assert not (tmp_path / "forge-home" / "devserver.json").exists()


def test_env_without_a_topology_is_one_line(cli: CliRunner) -> None:
    result = cli.invoke(_app(), ["dev", "env"])
    line = assert_one_error_line(result, ErrorCode.DEV_SERVER, "no topology is recorded")
    assert "forge dev up --workers N" in line
