"""Spans through the SDK's OTLP/HTTP exporter to a real receiver, across a killed worker.

Two `forge worker` processes with FORGE_TELEMETRY=otlp export to a receiver in the test; the
first is SIGKILLed mid-step. The run is still one trace (its id derived from the run id), the
retried attempt is its own span with its attempt number, and the workflow the second worker
replayed is recorded once.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

from activities import telemetry as names
from schemas import names as activity_names
from schemas.run import RunInput
from schemas.run_source import PlanSource
from schemas.scope import Scope
from tests.telemetry.conftest import uninstall
from tests.telemetry.otlp_receiver import ReceivedSpan, Receiver
from tests.workflows.engine import forge_client
from tests.workflows.test_fault_tolerance import _no_launcher_of, _slow_plan, _wait_for_event
from workers.process.worker import Services
from workers.services import runs
from workers.settings import Settings
from workers.telemetry import tracing

ROOT = Path(__file__).resolve().parents[2]


def traced_worker(
    home: Path, address: str, task_queue: str, receiver: str, **more: str
) -> subprocess.Popen:
    """A `forge worker` exporting by OTLP to `receiver`; `more` adds variables to its env."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "PYTHONPATH": str(ROOT),  # this checkout's code, whichever the venv has installed
        "FORGE_HOME": str(home),
        "FORGE_TEMPORAL_ADDRESS": address,
        "FORGE_TASK_QUEUE": task_queue,
        "FORGE_TELEMETRY": "otlp",
        "OTEL_EXPORTER_OTLP_ENDPOINT": receiver,
        "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment=test",
        **more,
    }
    forge = Path(sys.executable).parent / "forge"
    return subprocess.Popen(
        [str(forge), "worker"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _until(receiver: Receiver, trace_id: str, done) -> list[ReceivedSpan]:
    """The trace's spans once `done(spans)` holds: the batch processor exports every 5 s."""
    for _ in range(1200):
        found = [s for s in receiver.received() if s.trace_id == trace_id]
        if done(found):
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"the receiver never got the spans wanted: {found}")


def _retried(spans: list[ReceivedSpan]) -> list[ReceivedSpan]:
    step = f"RunActivity:{activity_names.STEP_EXECUTE}"
    return [
        s
        for s in spans
        if s.name == step
        and s.attributes.get(names.STEP_ID) == "slow"
        and s.attributes.get(names.ATTEMPT, 0) >= 2
    ]


async def test_a_killed_workers_retried_attempt_is_its_own_span_in_the_runs_trace(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    address = temporal_env.client.service_client.config.target_host
    with Receiver() as receiver:
        settings = Settings(
            home=home, task_queue=task_queue, telemetry="otlp", otel_endpoint=receiver.url
        )
        services = Services.from_settings(settings)
        ref = services.artifacts.put_bytes(
            Scope.default(), runs.plan_bytes(_slow_plan()), logical_path="meta/p.json"
        )
        run = RunInput(run_id=runs.new_run_id(), source=PlanSource(plan_ref=ref))
        trace_id = tracing.format_trace_id(tracing.run_trace_id(run.run_id))
        first = traced_worker(home, address, task_queue, receiver.url)
        second = None
        try:
            tracing.install(settings, "cli")  # this process submits, as `forge run` does
            client = await forge_client(temporal_env)
            handle = await runs.start_run(client, settings, run)
            await _wait_for_event(home, run.run_id, "step.started.v1", "slow")
            await asyncio.sleep(1)
            os.kill(first.pid, signal.SIGKILL)
            first.wait()
            await _no_launcher_of(first.pid)
            second = traced_worker(home, address, task_queue, receiver.url)
            result = await asyncio.wait_for(handle.result(), timeout=180)
            assert result.status == "completed"
            assert result.steps["slow"].attempts >= 2
            spans = await _until(
                receiver,
                trace_id,
                lambda found: (
                    _retried(found)
                    and any(s.name == "RunWorkflow:CompiledRunWorkflow" for s in found)
                    and any(s.name == runs.SUBMIT_SPAN for s in found)
                ),
            )
        finally:
            uninstall()
            for proc in (first, second):
                if proc is not None and proc.poll() is None:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
    # Spans, and the workers' metrics (FORGE_TELEMETRY=otlp exports both) if an export came due.
    assert "/v1/traces" in receiver.paths
    assert set(receiver.paths) <= {"/v1/traces", "/v1/metrics"}
    # The submission (this process, forge-cli) is the root; the workers joined its trace.
    (root,) = [s for s in spans if s.name == runs.SUBMIT_SPAN]
    assert root.service == "forge-cli" and root.parent_span_id == ""
    submitted = {s.name for s in spans if s.service == "forge-cli"}
    assert submitted == {runs.SUBMIT_SPAN, "StartWorkflow:CompiledRunWorkflow"}
    assert {s.service for s in spans if s.name not in submitted} == {"forge-worker"}
    # The retried attempt: its own span, its attempt number, the step and run named.
    (retry,) = _retried(spans)
    assert retry.attributes[names.RUN_ID] == run.run_id
    assert retry.attributes[names.TENANT] == Scope.default().tenant
    # The second worker replayed the workflow: its span was recorded once, and no attempt twice.
    assert [s.name for s in spans].count("RunWorkflow:CompiledRunWorkflow") == 1
    attempts = Counter(
        (s.name, s.attributes.get("temporalActivityID"), s.attributes.get(names.ATTEMPT))
        for s in spans
        if s.name.startswith("RunActivity:")
    )
    assert set(attempts.values()) == {1}, attempts
    received_all = [s for s in receiver.received() if s.attributes.get(names.RUN_ID) == run.run_id]
    assert {s.trace_id for s in received_all} == {trace_id}
