"""`forge doctor` as a user runs it: one line per check, --json, exit 0 / 1 / 2."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from schemas.doctor import DoctorReport
from workers.cli import app

Invoke = Callable[..., Result]
_NAMES = [
    "temporal.reachable",
    "temporal.auth",
    "temporal.namespace",
    "database",
    "artifacts",
    "step_runtime",
    "sandbox",
    "model_providers",
]
_SCRIPT = "responses:\n  - response:\n      content:\n        - {type: text, text: hello}\n"


@pytest.fixture
def forge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Invoke]:
    """`forge` on the embedded defaults (its own FORGE_HOME), a model script as the provider."""
    for name in (
        "FORGE_TEMPORAL_ADDRESS",
        "FORGE_NAMESPACE",
        "FORGE_DEV_PORT",
        "FORGE_DATABASE_URL",
        "FORGE_ARTIFACTS_URL",
        "ANTHROPIC_API_KEY",
    ):
        monkeypatch.delenv(name, raising=False)
    script = tmp_path / "script.yaml"
    script.write_text(_SCRIPT, encoding="utf-8")
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("FORGE_MODEL_SCRIPT", str(script))
    monkeypatch.setenv("COLUMNS", "80")  # narrow: a check's line must still be one line
    runner = CliRunner()
    yield lambda *args: runner.invoke(app, list(args))
    runner.invoke(app, ["dev", "down"])  # the embedded server doctor started, if it did


def test_the_embedded_defaults_pass_every_check(forge: Invoke, tmp_path: Path) -> None:
    result = forge("doctor")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert [line.split(":")[0] for line in lines[:-1]] == [f"✓ {n}" for n in _NAMES]
    assert lines[-1] == "all checks passed"
    assert "the embedded dev server at 127.0.0.1:" in lines[0]
    as_json = forge("doctor", "--json")
    assert as_json.exit_code == 0, as_json.output
    assert DoctorReport.model_validate_json(as_json.output).ok  # the exported schema's shape
    report = json.loads(as_json.output)
    assert report["ok"] is True
    assert [c["name"] for c in report["checks"]] == _NAMES
    assert all(c["ok"] and c["fix"] is None for c in report["checks"])
    assert report["checks"][3]["detail"].startswith(f"SQLite at {tmp_path / 'home' / 'forge.db'}")


def test_a_failed_check_exits_1_with_its_fix(
    forge: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", f"127.0.0.1:{port}")
    monkeypatch.delenv("FORGE_MODEL_SCRIPT")
    result = forge("doctor")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith(
        f"✗ temporal.reachable: cannot reach 127.0.0.1:{port}: connection refused"
    )
    assert " — check FORGE_TEMPORAL_ADDRESS" in lines[0]
    assert lines[-2].startswith("✗ model_providers: no model provider configured for anthropic")
    assert lines[-1] == "4 of 8 checks failed"
    report = json.loads(forge("doctor", "--json").output)
    assert report["ok"] is False
    failed = [c["name"] for c in report["checks"] if not c["ok"]]
    assert failed == [
        "temporal.reachable",
        "temporal.auth",
        "temporal.namespace",
        "model_providers",
    ]


def test_invalid_settings_exit_2_with_one_line(
    forge: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", "no port here")
    result = forge("doctor")
    assert result.exit_code == 2
    assert result.output.count("\n") == 1
    assert "FORGE_TEMPORAL_ADDRESS='no port here' is invalid" in result.output
