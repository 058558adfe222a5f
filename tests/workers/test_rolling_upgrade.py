"""Rolling upgrade: two `forge worker` builds at once; a run stays on the build it started on.

Build A's and build B's workers are separate processes polling one task queue as versions of
one worker deployment. A run started while A is current waits at its gate while B is made
current (`forge deploy promote B`); it finishes on A, and a run started after the switch runs
on B. The workflow histories say which build completed every workflow task and which process
started every activity.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from uuid import uuid4

from temporalio.api.deployment.v1 import WorkerDeploymentVersion
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.workflowservice.v1 import DescribeWorkerDeploymentVersionRequest
from temporalio.client import WorkflowHandle
from temporalio.service import RPCError

from tests.workflows.engine import Engine, forge_client
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from tests.workflows.test_gates_durability import idle, phase
from workers.process.worker import Services
from workers.settings import Settings
from workflows.run import CompiledRunWorkflow

# This checkout's `forge` (the venv's console script may belong to another checkout).
ROOT = Path(__file__).resolve().parents[2]
FORGE = (sys.executable, "-m", "workers.cli")
_STOP_S = 60


class Forge:
    """`forge` as processes, all with one FORGE_HOME, task queue and worker deployment."""

    def __init__(self, home: Path, address: str, task_queue: str, deployment: str) -> None:
        self.logs = home.parent
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "FORGE_HOME": str(home),
            "FORGE_TEMPORAL_ADDRESS": address,
            "FORGE_TASK_QUEUE": task_queue,
            "FORGE_DEPLOYMENT_NAME": deployment,
        }

    def run(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [*FORGE, *args], env=self.env, cwd=ROOT, capture_output=True, text=True, timeout=120
        )

    @contextmanager
    def worker(self, build_id: str) -> Iterator[subprocess.Popen[bytes]]:
        """`forge worker` of this build, stopped by Ctrl-C (SIGINT) on exit, killed if stuck."""
        log = (self.logs / f"worker-{build_id}.log").open("wb")
        proc = subprocess.Popen(
            [*FORGE, "worker"],
            env={**self.env, "FORGE_BUILD_ID": build_id},
            cwd=ROOT,
            start_new_session=True,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            yield proc
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGINT)
                try:
                    proc.wait(timeout=_STOP_S)
                except subprocess.TimeoutExpired:
                    os.killpg(proc.pid, signal.SIGKILL)
                    proc.wait()
            log.close()

    def log_of(self, build_id: str) -> str:
        return (self.logs / f"worker-{build_id}.log").read_text(errors="replace")[-3000:]


async def _polled(eng: Engine, deployment: str, build_id: str, forge: Forge) -> None:
    """Until the build's worker polls the queue for workflow and activity tasks: Temporal
    promotes a build only once it polls every task queue the current build polls."""
    request = DescribeWorkerDeploymentVersionRequest(
        namespace=eng.client.namespace,
        deployment_version=WorkerDeploymentVersion(deployment_name=deployment, build_id=build_id),
    )
    queue = eng.settings.task_queue
    wanted = {
        (queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW),
        (queue, TaskQueueType.TASK_QUEUE_TYPE_ACTIVITY),
    }
    try:
        async with asyncio.timeout(_STOP_S * 2):
            while True:
                try:
                    info = await eng.client.workflow_service.describe_worker_deployment_version(
                        request
                    )
                except RPCError:  # not yet known: no worker of the build has polled
                    info = None
                polled = (
                    {(q.name, q.type) for q in info.worker_deployment_version_info.task_queue_infos}
                    if info
                    else set()
                )
                if wanted <= polled:
                    return
                await asyncio.sleep(0.2)
    except TimeoutError:
        log = forge.log_of(build_id)
        raise AssertionError(f"build {build_id} never polled; its log:\n{log}") from None


def _promote(forge: Forge, build_id: str) -> str:
    done = forge.run("deploy", "promote", build_id)
    assert done.returncode == 0, done.stderr
    return done.stdout


async def _who_ran(handle: WorkflowHandle) -> tuple[set[str], set[str], int]:
    """(builds that completed its workflow tasks, pids that started its activities,
    workflow tasks completed after its gate decision was accepted)."""
    builds: set[str] = set()
    pids: set[str] = set()
    after_decision = 0
    decided = False
    async for event in handle.fetch_history_events():
        if event.HasField("workflow_execution_update_accepted_event_attributes"):
            decided = True
        if event.HasField("workflow_task_completed_event_attributes"):
            builds.add(event.workflow_task_completed_event_attributes.deployment_version.build_id)
            after_decision += decided
        if event.HasField("activity_task_started_event_attributes"):
            pids.add(event.activity_task_started_event_attributes.identity.split("@")[0])
    return builds, pids, after_decision


async def test_a_run_finishes_on_its_build_while_new_runs_start_on_the_promoted_one(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    deployment = f"forge-{uuid4().hex[:12]}"
    address = temporal_env.client.service_client.config.target_host
    forge = Forge(home, address, task_queue, deployment)
    settings = Settings(home=home, task_queue=task_queue)
    services = Services.from_settings(settings)
    eng = Engine(await forge_client(temporal_env), settings, services)
    try:
        with forge.worker("A") as worker_a:
            await _polled(eng, deployment, "A", forge)
            assert "is current" in _promote(forge, "A")
            async with phase("run one reaches its gate on A"):
                one = await eng.start(gated_plan())
                gate_one = await pending_gate(one)
                await idle(one)
            with forge.worker("B") as worker_b:
                await _polled(eng, deployment, "B", forge)
                assert "(was A)" in _promote(forge, "B")
                async with phase("run two reaches its gate on B"):
                    two = await eng.start(gated_plan())
                    gate_two = await pending_gate(two)
                async with phase("both runs finish"):
                    await one.execute_update(CompiledRunWorkflow.decide_gate, decision(gate_one))
                    await two.execute_update(CompiledRunWorkflow.decide_gate, decision(gate_two))
                    results = [await one.result(), await two.result()]
                shown = forge.run("deploy", "status", "--json")
                assert worker_a.poll() is None and worker_b.poll() is None  # neither died
    finally:
        services.close()
    assert [r.status for r in results] == ["completed", "completed"]
    builds, pids, after = await _who_ran(one)
    assert builds == {"A"} and pids == {str(worker_a.pid)}
    assert after > 0  # it went on after B became current, still on A
    builds, pids, _ = await _who_ran(two)
    assert builds == {"B"} and pids == {str(worker_b.pid)}
    assert shown.returncode == 0, shown.stderr
    status = json.loads(shown.stdout)
    assert status["current_build_id"] == "B"
    assert {v["build_id"]: v["status"] for v in status["versions"]}["A"] in ("draining", "drained")


def test_promoting_a_build_no_worker_has_polled_is_refused_in_one_line(cli, monkeypatch):
    monkeypatch.setenv("FORGE_DEPLOYMENT_NAME", f"forge-{uuid4().hex[:12]}")
    result = cli("deploy", "promote", "never-started")
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: DEPLOYMENT_REFUSED: cannot make build 'never-started'")
    assert "FORGE_BUILD_ID=never-started" in lines[0]


def test_deploy_without_a_deployment_name_says_which_variable(cli, monkeypatch):
    monkeypatch.delenv("FORGE_DEPLOYMENT_NAME", raising=False)
    result = cli("deploy", "status")
    assert result.exit_code == 2
    assert "FORGE_DEPLOYMENT_NAME is not set" in result.output
