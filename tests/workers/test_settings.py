from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from workers.settings import Settings, SettingsError


def test_defaults_without_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env({})
    assert settings.home == tmp_path.resolve() / ".forge"
    assert settings.home.is_absolute()
    assert settings.temporal_address is None
    assert settings.namespace == "default"
    assert settings.task_queue == "forge"
    assert settings.dev_server_port is None
    assert settings.packs_path == ()


def test_every_variable_is_read(tmp_path: Path) -> None:
    packs = os.pathsep.join([str(tmp_path / "a"), str(tmp_path / "b")])
    settings = Settings.from_env(
        {
            "FORGE_HOME": str(tmp_path / "home"),
            "FORGE_TEMPORAL_ADDRESS": "temporal.internal:7233",
            "FORGE_NAMESPACE": "billing-prod",
            "FORGE_TASK_QUEUE": "forge-gpu",
            "FORGE_DEV_PORT": "17233",
            "FORGE_PACKS_PATH": packs,
        }
    )
    assert settings.home == tmp_path / "home"
    assert settings.temporal_address == "temporal.internal:7233"
    assert settings.namespace == "billing-prod"
    assert settings.task_queue == "forge-gpu"
    assert settings.dev_server_port == 17233
    assert settings.packs_path == (tmp_path / "a", tmp_path / "b")


def test_relative_paths_resolve_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env(
        {
            "FORGE_HOME": "state",
            "FORGE_PACKS_PATH": f"packs{os.pathsep}{os.pathsep}more{os.pathsep}",
        }
    )
    base = tmp_path.resolve()
    assert settings.home == base / "state"
    assert settings.packs_path == (base / "packs", base / "more")


def test_empty_values_count_as_unset() -> None:
    settings = Settings.from_env({"FORGE_TEMPORAL_ADDRESS": "", "FORGE_DEV_PORT": " "})
    assert settings.temporal_address is None
    assert settings.dev_server_port is None


def test_ignores_unrelated_variables() -> None:
    assert Settings.from_env({"PATH": "/bin", "FORGE_UNKNOWN": "x"}).namespace == "default"


def test_reads_process_environment_when_no_mapping(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FORGE_TASK_QUEUE", "from-process-env")
    assert Settings.from_env().task_queue == "from-process-env"


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FORGE_DEV_PORT", "abc", "integer port between 1 and 65535"),
        ("FORGE_DEV_PORT", "0", "integer port between 1 and 65535"),
        ("FORGE_DEV_PORT", "70000", "integer port between 1 and 65535"),
        ("FORGE_TEMPORAL_ADDRESS", "localhost", "host:port"),
        ("FORGE_TEMPORAL_ADDRESS", "localhost:99999", "host:port"),
        ("FORGE_TEMPORAL_ADDRESS", "http://localhost:7233", "host:port"),
        ("FORGE_NAMESPACE", "has space", "namespace name"),
        ("FORGE_TASK_QUEUE", "two words", "without whitespace"),
    ],
)
def test_invalid_values_name_variable_value_and_expectation(
    variable: str, value: str, expected: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({variable: value})
    message = str(caught.value)
    assert variable in message
    assert repr(value) in message
    assert expected in message
    assert caught.value.variable == variable
    assert isinstance(caught.value, ValueError)


def test_settings_are_frozen_and_closed() -> None:
    settings = Settings.from_env({})
    with pytest.raises(ValidationError):
        settings.namespace = "other"  # type: ignore[misc]
    with pytest.raises(ValidationError):
        Settings(unknown="x")  # type: ignore[call-arg]


def test_direct_construction_validates_port() -> None:
    with pytest.raises(ValidationError):
        Settings(dev_server_port=0)
