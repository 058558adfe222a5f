from __future__ import annotations

import os
from pathlib import Path

import pytest
from pydantic import ValidationError

from activities.store.artifacts import LocalArtifactStore
from workers.process.worker import Services
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
    assert settings.database_url == f"sqlite:///{tmp_path.resolve() / '.forge' / 'forge.db'}"
    assert settings.artifacts_url == str(tmp_path.resolve() / ".forge" / "artifacts")
    assert settings.s3_endpoint is None


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
            "FORGE_DATABASE_URL": "postgresql+psycopg://forge:pw@db.internal:5432/forge",
            "FORGE_ARTIFACTS_URL": "s3://forge-artifacts/prod",
            "FORGE_S3_ENDPOINT": "http://minio:9000",
        }
    )
    assert settings.home == tmp_path / "home"
    assert settings.temporal_address == "temporal.internal:7233"
    assert settings.namespace == "billing-prod"
    assert settings.task_queue == "forge-gpu"
    assert settings.dev_server_port == 17233
    assert settings.packs_path == (tmp_path / "a", tmp_path / "b")
    assert settings.database_url == "postgresql+psycopg://forge:pw@db.internal:5432/forge"
    assert settings.artifacts_url == "s3://forge-artifacts/prod"
    assert settings.s3_endpoint == "http://minio:9000"


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
        ("FORGE_DATABASE_URL", "mysql://db/forge", "sqlite:///PATH"),
        ("FORGE_DATABASE_URL", "sqlite://", "postgresql+psycopg://"),
        ("FORGE_DATABASE_URL", "sqlite:///:memory:", "sqlite:///PATH"),
        ("FORGE_DATABASE_URL", "postgresql://", "postgresql+psycopg://"),
        ("FORGE_DATABASE_URL", "forge.db", "sqlite:///PATH"),
        ("FORGE_ARTIFACTS_URL", "s3://", "s3://BUCKET/PREFIX"),
        ("FORGE_ARTIFACTS_URL", "s3://Bad_Bucket/x", "s3://BUCKET/PREFIX"),
        ("FORGE_ARTIFACTS_URL", "http://example.com/x", "file:///ABSOLUTE/PATH"),
        ("FORGE_ARTIFACTS_URL", "file://host/x", "file:///ABSOLUTE/PATH"),
        ("FORGE_S3_ENDPOINT", "minio:9000", "http(s) URL"),
        ("FORGE_S3_ENDPOINT", "ftp://minio", "http(s) URL"),
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


def test_store_locations_follow_home(tmp_path: Path) -> None:
    settings = Settings.from_env({"FORGE_HOME": str(tmp_path / "h")})
    assert settings.database_url == f"sqlite:///{tmp_path / 'h' / 'forge.db'}"
    assert settings.artifacts_url == str(tmp_path / "h" / "artifacts")
    direct = Settings(home=tmp_path / "d")
    assert direct.database_url == f"sqlite:///{tmp_path / 'd' / 'forge.db'}"


def test_relative_store_paths_resolve_against_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    settings = Settings.from_env(
        {"FORGE_DATABASE_URL": "sqlite:///state/forge.db", "FORGE_ARTIFACTS_URL": "blobs"}
    )
    base = tmp_path.resolve()
    assert settings.database_url == f"sqlite:///{base / 'state' / 'forge.db'}"
    assert settings.artifacts_url == str(base / "blobs")
    absolute = Settings.from_env({"FORGE_DATABASE_URL": "sqlite:////var/lib/forge/forge.db"})
    assert absolute.database_url == "sqlite:////var/lib/forge/forge.db"
    file_url = Settings.from_env({"FORGE_ARTIFACTS_URL": "file:///var/lib/forge/artifacts"})
    assert file_url.artifacts_url == "file:///var/lib/forge/artifacts"


def test_database_password_is_not_echoed_in_errors() -> None:
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_DATABASE_URL": "postgresql://forge:s3cret@/"})
    assert "s3cret" not in str(caught.value)
    assert "forge:***@" in str(caught.value)


def test_direct_construction_validates_store_urls() -> None:
    with pytest.raises(ValidationError):
        Settings(database_url="mysql://db/forge")
    with pytest.raises(ValidationError):
        Settings(artifacts_url="gs://bucket")
    with pytest.raises(ValidationError):
        Settings(s3_endpoint="minio:9000")


def test_a_local_artifact_store_is_as_durable_as_the_event_log(tmp_path: Path) -> None:
    embedded = Settings(home=tmp_path)
    assert embedded.database_url.startswith("sqlite") and not embedded.artifacts_durable
    served = Settings(home=tmp_path, database_url="postgresql://forge@db.internal/forge")
    assert served.artifacts_durable
    store = Services.from_settings(embedded).artifacts
    assert isinstance(store, LocalArtifactStore) and not store.durable


def test_the_step_runtime_defaults_to_opt_and_must_be_absolute() -> None:
    assert Settings.from_env({}).step_runtime == Path("/opt/forge/runtime")
    chosen = Settings.from_env({"FORGE_STEP_RUNTIME": "/srv/forge/runtime"})
    assert chosen.step_runtime == Path("/srv/forge/runtime")
    with pytest.raises(SettingsError, match="FORGE_STEP_RUNTIME='runtime' is invalid"):
        Settings.from_env({"FORGE_STEP_RUNTIME": "runtime"})
