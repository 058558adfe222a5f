"""`forge dev up --workers 2 --api` with FORGE_METRICS_PORT: each process its own /metrics port,
shown by `forge dev status` and scraped there over HTTP."""

from __future__ import annotations

import json
import time

import httpx
import pytest

from tests.support.topology import clean_env, forge


def _scraped(port: int) -> str:
    """/metrics once Temporal's first metrics were drained into it (once a second)."""
    text = ""
    for _ in range(300):
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=30).text
        if "temporal_request_total{" in text:
            break
        time.sleep(0.1)
    return text


@pytest.mark.timeout(600)
def test_each_topology_process_serves_metrics_on_the_port_status_shows() -> None:
    # A fixed port for N processes on one host would collide: `up` gives each a free one.
    with clean_env({"FORGE_METRICS_PORT": "9464"}) as env:
        up = forge(env, "dev", "up", "--workers", "2", "--api")
        assert up.returncode == 0, up.stdout + up.stderr
        status = forge(env, "dev", "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        processes = json.loads(status.stdout)["processes"]
        served = {p["name"]: p["metrics_port"] for p in processes if p["kind"] in ("worker", "api")}
        assert set(served) == {"api", "worker-1", "worker-2"}
        ports = list(served.values())
        assert all(isinstance(port, int) for port in ports) and len(set(ports)) == 3, served
        assert 9464 not in ports
        for name, port in served.items():
            assert "temporal_request_total{" in _scraped(port), name
        table = forge(env, "dev", "status")
        assert table.returncode == 0 and "metrics" in table.stdout
        assert all(str(port) in table.stdout for port in ports), table.stdout
