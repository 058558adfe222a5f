"""/metrics of a real `forge worker` process: Temporal's runtime metrics and Forge's, over HTTP."""

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from schemas.run import RunInput
from schemas.run_source import PlanSource
from schemas.scope import Scope
from tests.workflows.engine import forge_client
from tests.workflows.plans import code_step, plan, write_json
from workers.process.worker import Services
from workers.services import runs
from workers.settings import Settings
from workers.telemetry.ports import recorded_metrics_port

ROOT = Path(__file__).resolve().parents[2]


def _worker(home: Path, address: str, task_queue: str, log: Path) -> subprocess.Popen[bytes]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FORGE_HOME": str(home),
        "FORGE_TEMPORAL_ADDRESS": address,
        "FORGE_TASK_QUEUE": task_queue,
        "FORGE_METRICS_PORT": "0",
        # This checkout's code, whichever one the virtualenv's `forge` script points at.
        "PYTHONPATH": str(ROOT),
    }
    with log.open("wb") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "workers.cli", "worker", "--log-format", "json"],
            cwd=ROOT,
            env=env,
            start_new_session=True,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


async def _recorded_port(home: Path, proc: subprocess.Popen[bytes], log: Path) -> int:
    for _ in range(600):
        port = recorded_metrics_port(home, proc.pid)
        if port is not None:
            return port
        assert proc.poll() is None, log.read_text()
        await asyncio.sleep(0.1)
    raise AssertionError(f"no metrics port recorded for worker {proc.pid}: {log.read_text()}")


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


async def _scrape(port: int, wanted: str) -> str:
    """/metrics once it shows `wanted` (Temporal's buffer drains each second)."""
    text = ""
    async with httpx.AsyncClient() as http:
        for _ in range(300):
            answer = await http.get(f"http://127.0.0.1:{port}/metrics")
            assert answer.status_code == 200
            assert answer.headers["content-type"].startswith("text/plain")
            text = answer.text
            if wanted in text:
                return text
            await asyncio.sleep(0.1)
    raise AssertionError(f"{wanted} never appeared in /metrics:\n{text}")


async def test_worker_serves_temporal_and_forge_metrics_on_its_recorded_port(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    settings = Settings(home=home, task_queue=task_queue)
    services = Services.from_settings(settings)
    client = await forge_client(temporal_env)
    address = temporal_env.client.service_client.config.target_host
    document = plan(code_step("only", write_json("output/only.json"), ["output/only.json"]))
    ref = services.artifacts.put_bytes(
        Scope.default(), runs.plan_bytes(document), logical_path="meta/p.json"
    )
    run = RunInput(run_id=runs.new_run_id(), source=PlanSource(plan_ref=ref))
    first_log, second_log = tmp_path / "first.log", tmp_path / "second.log"
    first = _worker(home, address, task_queue, first_log)
    second = _worker(home, address, f"{task_queue}-idle", second_log)
    try:
        first_port = await _recorded_port(home, first, first_log)
        second_port = await _recorded_port(home, second, second_log)
        assert first_port != second_port  # two workers on one host, port 0: no collision
        handle = await runs.start_run(client, settings, run)
        result = await asyncio.wait_for(handle.result(), timeout=180)
        assert result.status == "completed"
        text = await _scrape(first_port, "forge_steps_total{")
        idle = await _scrape(second_port, "temporal_")
    finally:
        _stop(first)
        _stop(second)
    # Forge's instruments: the one step completed, its duration and its sandbox's start observed.
    steps = [line for line in text.splitlines() if line.startswith("forge_steps_total{")]
    assert len(steps) == 1 and 'forge_outcome="completed"' in steps[0], steps
    assert steps[0].endswith(" 1.0"), steps
    assert "forge_step_duration_seconds_count{" in text
    assert "forge_sandbox_start_duration_seconds_count" in text
    # Temporal's runtime metrics, bridged from the SDK's buffer into the same endpoint.
    assert "temporal_request_total{" in text, text
    assert 'temporal_worker_start_total{namespace="default"' in text
    assert f'task_queue="{task_queue}"' in text
    assert "temporal_" in idle and "forge_steps" not in idle
    # The port files are gone with their processes; the log lines were JSON.
    assert recorded_metrics_port(home, first.pid) is None
    logged = first_log.read_text().splitlines()
    lines = [json.loads(line) for line in logged if line.startswith("{")]
    assert lines and all({"time", "level", "logger", "message"} <= set(line) for line in lines)
