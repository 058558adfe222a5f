"""Metrics by OTLP from a real `forge worker` process: FORGE_TELEMETRY=otlp, no /metrics port.

Two workers export to a receiver in the test (tests/telemetry/otlp_receiver.py, decoding with
opentelemetry-proto): one every 500 ms, which runs a run, and an idle one whose interval is an
hour, so whatever it sends came from the flush when it stops.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess

from schemas.run import RunInput
from schemas.run_source import PlanSource
from schemas.scope import Scope
from tests.telemetry.otlp_receiver import ReceivedPoint, Receiver
from tests.telemetry.test_otlp_kill import traced_worker
from tests.workflows.engine import forge_client
from tests.workflows.plans import code_step, plan, write_json
from workers.process.worker import Services
from workers.services import runs
from workers.settings import Settings
from workers.telemetry.ports import recorded_metrics_port


def _stop(proc: subprocess.Popen[bytes]) -> int:
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    return proc.returncode


def _of(receiver: Receiver, service: str, name: str) -> list[ReceivedPoint]:
    return [p for p in receiver.received_points() if p.service == service and p.name == name]


async def _until_point(receiver: Receiver, service: str, name: str) -> list[ReceivedPoint]:
    for _ in range(1200):
        found = _of(receiver, service, name)
        if found:
            return found
        await asyncio.sleep(0.1)
    names = sorted({(p.service, p.name) for p in receiver.received_points()})
    raise AssertionError(f"{service} never exported {name}; received: {names}")


async def test_a_worker_exports_forge_and_temporal_metrics_by_otlp_and_flushes_at_exit(
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
    with Receiver() as receiver:
        busy = traced_worker(
            home,
            address,
            task_queue,
            receiver.url,
            OTEL_SERVICE_NAME="w-busy",
            OTEL_METRIC_EXPORT_INTERVAL="500",
        )
        idle = traced_worker(
            home,
            address,
            f"{task_queue}-idle",
            receiver.url,
            OTEL_SERVICE_NAME="w-idle",
            OTEL_METRIC_EXPORT_INTERVAL="3600000",
        )
        try:
            # Temporal's runtime metrics arrive while the worker runs (its periodic export).
            started = await _until_point(receiver, "w-busy", "temporal_worker_start")
            assert recorded_metrics_port(home, busy.pid) is None  # pushed only, nothing served
            handle = await runs.start_run(client, settings, run)
            result = await asyncio.wait_for(handle.result(), timeout=180)
            assert result.status == "completed"
            steps = await _until_point(receiver, "w-busy", "forge.steps")
            # The idle worker's hour has not passed: nothing of it yet, until it stops.
            assert _of(receiver, "w-idle", "temporal_worker_start") == []
            assert _stop(idle) == 0
            flushed = _of(receiver, "w-idle", "temporal_worker_start")
        finally:
            _stop(busy)
            _stop(idle)
    assert started[0].scope == "temporalio"
    assert started[0].attributes["task_queue"] == task_queue
    assert started[0].value >= 1
    # Cumulative sums: the latest export holds the one completed step attempt.
    assert steps[-1].scope == "forge"
    assert steps[-1].attributes["forge.outcome"] == "completed"
    assert steps[-1].attributes["forge.tenant"] == Scope.default().tenant
    assert steps[-1].value == 1
    assert _of(receiver, "w-busy", "forge.step.duration")[-1].value == 1  # a histogram's count
    assert flushed and flushed[-1].attributes["task_queue"] == f"{task_queue}-idle"
    assert _of(receiver, "w-idle", "forge.steps") == []
    assert set(receiver.paths) == {"/v1/metrics", "/v1/traces"}
