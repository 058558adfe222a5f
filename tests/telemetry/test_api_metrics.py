"""`forge api` with FORGE_METRICS_PORT: /metrics on its own port, never on the tenants' port."""

import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import httpx

from tests.telemetry.test_metrics_endpoint import ROOT, _recorded_port, _scrape
from workers.telemetry.ports import recorded_metrics_port


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def test_the_api_serves_metrics_on_its_metrics_port_only(temporal_env, tmp_path: Path):
    home = tmp_path / "home"
    api_port = _free_port()
    log = tmp_path / "api.log"
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FORGE_HOME": str(home),
        "FORGE_TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "FORGE_METRICS_PORT": "0",
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:
        api = subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "api", "--port", str(api_port)],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        port = await _recorded_port(home, api, log)
        assert port != api_port
        # The API's own Temporal client, bridged from the SDK's buffer.
        text = await _scrape(port, "temporal_request_total{")
        assert 'service_name="temporal-core-sdk"' in text
        async with httpx.AsyncClient() as http:
            healthy = await http.get(f"http://127.0.0.1:{api_port}/healthz")
            assert healthy.status_code == 200
            # Metrics span tenants: the port tenants reach does not serve them.
            assert (await http.get(f"http://127.0.0.1:{api_port}/metrics")).status_code == 404
    finally:
        if api.poll() is None:
            os.killpg(api.pid, signal.SIGTERM)
            api.wait(timeout=30)
    assert recorded_metrics_port(home, api.pid) is None  # forgotten as the API stopped
