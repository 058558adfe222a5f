"""The production topology as processes: `forge dev up --workers N [--postgres] [--s3] [--api]`.

The dev server (devserver.py), optionally a PostgreSQL cluster (localpg.py) and a moto S3
server (locals3.py), then the API and N workers, each a `forge` process configured only through
the environment variables a compose file sets (FORGE_TEMPORAL_ADDRESS, FORGE_DATABASE_URL, ...).
Every process is recorded in FORGE_HOME/topology.json as it starts, so `forge dev status` can
probe each and `forge dev down` can stop each, even after a failed `up`.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
import urllib.request
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from activities.store.migrate import upgrade
from workers.process import locals3
from workers.process.devserver import DevServer, DevServerError, TopologyError, find_binary
from workers.process.localpg import APP_ROLE, OWNER_ROLE, LocalPostgres, find_bindir
from workers.process.procs import (
    HOST,
    POLL,
    PROBE_TIMEOUT,
    alive,
    free_port,
    locked,
    log_tail,
    spawn,
    start_ticks,
    wait_gone,
)
from workers.process.topology_record import (
    Kind,
    ProcessRecord,
    Shape,
    TopologyRecord,
    read_record,
    remove_record,
    write_record,
)
from workers.settings import ENV_VARS, Settings, process_environment

__all__ = ["Topology", "api_answers"]

_LOCK = "topology.lock"
_LOGS = "logs"
# A bound for a broken process, not a goal: a worker warms its library first, slowly on a busy host.
_STARTUP_TIMEOUT = 300.0
# A worker finishes its in-flight activity tasks on SIGINT; past this it is killed.
_STOP_GRACE = 30.0


class Topology:
    """Starts and stops the processes recorded under FORGE_HOME."""

    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.home = settings.home

    async def up(self, shape: Shape) -> tuple[TopologyRecord, bool]:
        """Start every process of `shape`; returns the record and whether it already ran.

        Raises:
            TopologyError: A flag conflicts with the settings, a program is missing, or a
                process did not come up (everything started is stopped again).
        """
        self._check(shape)
        self.home.mkdir(parents=True, exist_ok=True)
        async with locked(self.home / _LOCK):
            record = read_record(self.home)
            if record is not None and any(p.owned() for p in record.processes):
                if record.shape == shape and all(p.owned() for p in record.processes):
                    return record, True
                raise TopologyError(
                    f"a topology ({record.shape.describe()}) is already running from "
                    f"{self.home}; run `forge dev down` first, then `forge dev up` again"
                )
            remove_record(self.home)
            try:
                return await self._start(shape), False
            except BaseException:
                await self._stop_recorded(failed_up=True)
                raise

    async def down(self) -> list[str]:
        """Stop every recorded process and the dev server; returns what was stopped.

        Raises:
            TopologyError: A process survived SIGKILL, or PostgreSQL would not stop.
        """
        if not self.home.is_dir():
            return []
        async with locked(self.home / _LOCK):
            return await self._stop_recorded()

    def _check(self, shape: Shape) -> None:
        s = self.settings
        pg, s3 = shape.postgres, shape.s3
        taken = [
            (s.temporal_address is not None, "temporal_address", "--workers"),
            (pg and not s.database_url.startswith("sqlite"), "database_url", "--postgres"),
            (pg and s.database_owner_url is not None, "database_owner_url", "--postgres"),
            (s3 and s.artifacts_url.startswith("s3://"), "artifacts_url", "--s3"),
            (s3 and s.s3_endpoint is not None, "s3_endpoint", "--s3"),
        ]
        for clash, field, what in taken:
            if clash:
                raise TopologyError(
                    f"{ENV_VARS[field]} is set, but `forge dev up` with {what} configures it "
                    f"for every process it starts; unset {ENV_VARS[field]} or leave out the flag"
                )
        # Every process gets this shell's environment: N workers registering one version of a
        # deployment that no one promotes would leave every run waiting.
        for field in ("deployment_name", "build_id"):
            if getattr(s, field) is not None:
                raise TopologyError(
                    f"{ENV_VARS[field]} is set, but `forge dev up` starts unversioned workers; "
                    f"unset {ENV_VARS[field]}, or start versioned workers one build at a time "
                    "with `forge worker` and `forge deploy promote` (docs/deployment.md, "
                    "rolling upgrades)"
                )
        # Every program is found before anything starts: a missing one leaves nothing behind.
        find_binary()
        if pg:
            find_bindir()
        if s3:
            locals3.check_installed()

    async def _start(self, shape: Shape) -> TopologyRecord:
        s = self.settings
        logs = self.home / _LOGS
        logs.mkdir(exist_ok=True)
        server = await DevServer().up(s)
        address = server.address
        env: dict[str, str] = {
            ENV_VARS["home"]: str(self.home),
            ENV_VARS["temporal_address"]: address,
            ENV_VARS["namespace"]: s.namespace,
            ENV_VARS["task_queue"]: s.task_queue,
            ENV_VARS["database_url"]: s.database_url,
            ENV_VARS["artifacts_url"]: s.artifacts_url,
        }
        record = TopologyRecord(
            shape=shape,
            started_at=datetime.now(UTC),
            temporal_address=address,
            temporal_pid=server.pid,
            temporal_log=server.log_path,
            temporal_started=not server.already_running,
            environment=env,
        )
        write_record(self.home, record)
        if shape.postgres:
            record = await self._start_postgres(record)
        else:
            # SQLite migrates on open; once here, not raced by N workers opening it at once.
            await asyncio.to_thread(upgrade, s.database_url)
        if shape.s3:
            record = await self._start_s3(record, logs)
        child_env = {**process_environment(), **record.environment}
        child_env["PYTHONUNBUFFERED"] = "1"  # logs show each line as it is written
        if child_env.get(ENV_VARS["metrics_port"], "").strip():
            # One port for N processes on one host would collide: each takes a free one, and
            # records it for `forge dev status` (docs/observability.md).
            child_env[ENV_VARS["metrics_port"]] = "0"
        if shape.api:
            port = free_port()
            argv = [sys.executable, "-m", "workers.cli", "api", "--host", HOST, "--port", str(port)]
            record = self._spawn(record, "api", "api", argv, child_env, port, logs)
            await _wait_for(record.processes[-1], api_answers)
        workers = []
        for index in range(1, shape.workers + 1):
            argv = [sys.executable, "-m", "workers.cli", "worker"]
            record = self._spawn(record, f"worker-{index}", "worker", argv, child_env, None, logs)
            workers.append(record.processes[-1])
        # Temporal's protos load only here, and topology_health imports this module.
        from workers.process.topology_health import polling_pids, wait_healthy  # noqa: PLC0415

        if workers:

            async def polls(p: ProcessRecord) -> bool:
                return p.pid in await polling_pids(address, s.namespace, s.task_queue)

            for worker in workers:
                await _wait_for(worker, polls)
        # Ready is what `forge dev status` reports: every process answers its probe.
        await wait_healthy(s, record, _STARTUP_TIMEOUT)
        return record

    async def _start_postgres(self, record: TopologyRecord) -> TopologyRecord:
        cluster = await asyncio.to_thread(LocalPostgres.at, self.home)
        port = free_port()
        pid = await asyncio.to_thread(cluster.start, port)
        env = {
            **record.environment,
            ENV_VARS["database_url"]: cluster.url(APP_ROLE, port),
            ENV_VARS["database_owner_url"]: cluster.url(OWNER_ROLE, port),
        }
        process = ProcessRecord(
            name="postgres",
            kind="postgres",
            pid=pid,
            port=port,
            log=cluster.log,
            start_ticks=start_ticks(pid),
        )
        record = record.model_copy(update={"environment": env}).adding(process)
        write_record(self.home, record)  # recorded first: a failed migration still stops it
        await asyncio.to_thread(cluster.migrate, port)
        return record

    async def _start_s3(self, record: TopologyRecord, logs: Path) -> TopologyRecord:
        port = free_port()
        env = {
            **record.environment,
            ENV_VARS["artifacts_url"]: f"s3://{locals3.BUCKET}/{locals3.PREFIX}",
            ENV_VARS["s3_endpoint"]: locals3.endpoint(port),
            **locals3.CREDENTIALS,
        }
        record = record.model_copy(update={"environment": env})
        record = self._spawn(
            record, "s3", "s3", locals3.argv(port), process_environment(), port, logs
        )
        process = record.processes[-1]

        async def bucket_made(p: ProcessRecord) -> bool:
            try:
                await asyncio.to_thread(locals3.create_bucket, port, p.log)
            except DevServerError:
                return False
            return True

        await _wait_for(process, bucket_made)
        return record

    def _spawn(
        self,
        record: TopologyRecord,
        name: str,
        kind: Kind,
        argv: list[str],
        env: dict[str, str],
        port: int | None,
        logs: Path,
    ) -> TopologyRecord:
        log = logs / f"{name}.log"
        try:
            pid = spawn(argv, env, log)
        except OSError as err:
            raise TopologyError(
                f"could not start {name} ({argv[0]}): {err.strerror}; check that the "
                "program exists and is executable"
            ) from err
        process = ProcessRecord(
            name=name, kind=kind, pid=pid, port=port, log=log, start_ticks=start_ticks(pid)
        )
        record = record.adding(process)
        write_record(self.home, record)
        return record

    async def _stop_recorded(self, *, failed_up: bool = False) -> list[str]:
        record = read_record(self.home)
        stopped: list[str] = []
        if record is not None:
            # Clients first (they drain against the servers), then the servers they use.
            order = ("api", "worker", "s3", "postgres")
            for kind in order:
                group = [p for p in record.processes if p.kind == kind and p.owned()]
                if kind == "postgres":
                    for _ in group:
                        cluster = await asyncio.to_thread(LocalPostgres.at, self.home)
                        await asyncio.to_thread(cluster.stop)
                else:
                    await asyncio.gather(*(_stop_process(p) for p in group))
                stopped += [p.name for p in group]
        keep_server = failed_up and (record is None or not record.temporal_started)
        if not keep_server and await DevServer().down(self.settings):
            stopped.append("temporal")
        remove_record(self.home)
        return stopped


async def api_answers(process: ProcessRecord) -> bool:
    """Whether the API answers GET /healthz with 200."""
    return await asyncio.to_thread(_healthz, f"http://{HOST}:{process.port}/healthz")


def _healthz(url: str) -> bool:
    # The standard library's client: httpx is not among Forge's own dependencies.
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT) as answer:  # noqa: S310 - our loopback URL
            return bool(answer.status == 200)
    except (OSError, ValueError):
        return False


async def _wait_for(
    process: ProcessRecord, ready: Callable[[ProcessRecord], Awaitable[bool]]
) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + _STARTUP_TIMEOUT
    while True:
        if not alive(process.pid):
            raise TopologyError(
                f"{process.name} (pid {process.pid}) exited during startup; see {process.log}",
                log_tail(process.log),
            )
        if await ready(process):
            return
        if loop.time() >= deadline:
            raise TopologyError(
                f"{process.name} (pid {process.pid}) was not ready within "
                f"{_STARTUP_TIMEOUT:g} s; see {process.log}",
                log_tail(process.log),
            )
        await asyncio.sleep(POLL)


async def _stop_process(process: ProcessRecord) -> None:
    # SIGINT is a worker's Ctrl-C (it finishes in-flight tasks); uvicorn and moto take SIGTERM.
    first = signal.SIGINT if process.kind == "worker" else signal.SIGTERM
    for sig, wait in ((first, _STOP_GRACE), (signal.SIGKILL, 5.0)):
        with contextlib.suppress(ProcessLookupError):
            os.kill(process.pid, sig)
        if await wait_gone(process.pid, wait):
            return
    raise TopologyError(f"could not stop {process.name} (pid {process.pid}); kill it by hand")
