from __future__ import annotations

from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from workers.cli.dev import dev_app


@pytest.fixture
def cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> CliRunner:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "forge-home"))
    for name in ("FORGE_TEMPORAL_ADDRESS", "FORGE_DEV_PORT", "FORGE_NAMESPACE"):
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
