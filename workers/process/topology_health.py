"""`forge dev status` of a topology: each recorded process with pid, port and a real probe.

The dev server answers a gRPC health check; PostgreSQL a query as the application role; the
S3 server a HEAD of its bucket; the API GET /healthz; a worker is alive and polls its task
queue (Temporal lists its identity, `PID@host`, among the queue's pollers).
"""

from __future__ import annotations

import asyncio
import socket
from datetime import timedelta
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.api.taskqueue.v1 import TaskQueue
from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest
from temporalio.client import Client
from temporalio.service import RPCError

from workers.process import locals3
from workers.process.devserver import DevServer, TopologyError
from workers.process.localpg import LocalPostgres
from workers.process.procs import POLL, PROBE_TIMEOUT, log_tail
from workers.process.topology import api_answers
from workers.process.topology_record import ProcessRecord, TopologyRecord, shown
from workers.settings import ENV_VARS, Settings
from workers.telemetry.ports import recorded_metrics_port

__all__ = ["ProcessHealth", "TopologyStatus", "polling_pids", "topology_status", "wait_healthy"]


class ProcessHealth(BaseModel):
    """One line of `forge dev status`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    kind: Literal["temporal", "postgres", "s3", "api", "worker"]
    pid: int | None
    port: int | None
    alive: bool
    healthy: bool
    probe: str  # what was checked, and what it found
    log: Path
    # Where the process serves /metrics (FORGE_METRICS_PORT), as it recorded it; None: nowhere.
    metrics_port: int | None = None


class TopologyStatus(BaseModel):
    """`forge dev status --json`: every process, and the variables the processes were given."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    running: bool
    processes: tuple[ProcessHealth, ...]
    environment: dict[str, str]


async def polling_pids(address: str, namespace: str, task_queue: str) -> set[int]:
    """Pids of this host's processes polling `task_queue` for workflow tasks, per Temporal."""
    try:
        client = await asyncio.wait_for(
            Client.connect(address, namespace=namespace), timeout=PROBE_TIMEOUT
        )
        answer = await client.workflow_service.describe_task_queue(
            DescribeTaskQueueRequest(
                namespace=namespace,
                task_queue=TaskQueue(name=task_queue),
                task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
            ),
            timeout=timedelta(seconds=PROBE_TIMEOUT),
        )
    except (RuntimeError, RPCError, TimeoutError):
        return set()
    host = socket.gethostname()
    pids = set()
    for poller in answer.pollers:
        pid, _, poller_host = poller.identity.partition("@")
        if poller_host == host and pid.isdigit():
            pids.add(int(pid))
    return pids


async def topology_status(settings: Settings, record: TopologyRecord | None) -> TopologyStatus:
    """Probe the dev server and every recorded process."""
    server = await DevServer().status(settings)
    rows = [
        ProcessHealth(
            name="temporal",
            kind="temporal",
            pid=server.pid,
            port=server.port,
            alive=server.alive,
            healthy=server.running,
            probe=f"gRPC health at {server.address}: {'serving' if server.running else 'no answer'}"
            if server.address
            else "not recorded",
            log=server.log_path,
        )
    ]
    if record is None:
        return TopologyStatus(running=server.running, processes=tuple(rows), environment={})
    # The workers poll the queue they were started with, whatever this shell now says.
    queue = record.environment.get(ENV_VARS["task_queue"], settings.task_queue)
    namespace = record.environment.get(ENV_VARS["namespace"], settings.namespace)
    pids: set[int] = set()
    if any(p.kind == "worker" for p in record.processes):
        pids = await polling_pids(record.temporal_address, namespace, queue)
    for process in record.processes:
        rows.append(await _probe(settings.home, process, pids, queue))
    environment = shown(record.environment)
    return TopologyStatus(
        running=all(r.healthy for r in rows), processes=tuple(rows), environment=environment
    )


async def wait_healthy(settings: Settings, record: TopologyRecord, timeout: float) -> None:
    """Probe every process until all are healthy, as `forge dev status` would report them.

    Raises:
        TopologyError: A process exited, or was still unhealthy after `timeout` seconds.
    """
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        status = await topology_status(settings, record)
        if status.running:
            return
        for row in status.processes:
            if not row.alive:
                raise TopologyError(
                    f"{row.name} (pid {row.pid}) exited during startup; see {row.log}",
                    log_tail(row.log),
                )
        if loop.time() >= deadline:
            row = next(r for r in status.processes if not r.healthy)
            raise TopologyError(
                f"{row.name} (pid {row.pid}) was not healthy within {timeout:g} s "
                f"({row.probe}); see {row.log}",
                log_tail(row.log),
            )
        await asyncio.sleep(POLL)


async def _probe(home: Path, process: ProcessRecord, pids: set[int], queue: str) -> ProcessHealth:
    owned = process.owned()
    healthy, probe = False, "process gone"
    if owned:
        healthy, probe = await _check(home, process, pids, queue)
    return ProcessHealth(
        name=process.name,
        kind=process.kind,
        pid=process.pid,
        port=process.port,
        alive=owned,
        healthy=healthy,
        probe=probe,
        log=process.log,
        metrics_port=recorded_metrics_port(home, process.pid) if owned else None,
    )


async def _check(
    home: Path, process: ProcessRecord, pids: set[int], queue: str
) -> tuple[bool, str]:
    port = process.port or 0
    if process.kind == "postgres":
        cluster = await asyncio.to_thread(LocalPostgres.at, home)
        ok = await asyncio.to_thread(cluster.answers, port)
        return ok, f"SELECT 1 as forge_app: {'ok' if ok else 'refused'}"
    if process.kind == "s3":
        ok = await asyncio.to_thread(locals3.answers, port)
        return ok, f"HEAD bucket {locals3.BUCKET}: {'ok' if ok else 'failed'}"
    if process.kind == "api":
        ok = await api_answers(process)
        return ok, f"GET /healthz: {'200' if ok else 'no answer'}"
    ok = process.pid in pids
    return ok, f"polling {queue}" if ok else f"not polling {queue}"
