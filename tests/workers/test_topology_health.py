"""`forge dev up` returns only once every process is healthy as `forge dev status` reports it.

Real processes: the embedded dev server, and an HTTP server recorded as the API whose
GET /healthz fails for its first requests, as a slow API does on a loaded host.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from workers.process.devserver import DevServer, TopologyError
from workers.process.procs import free_port, spawn, start_ticks, wait_gone
from workers.process.topology_health import topology_status, wait_healthy
from workers.process.topology_record import ProcessRecord, Shape, TopologyRecord
from workers.settings import Settings

# Answers GET /healthz with 503 to its first `fails` requests (always when fails < 0), then 200.
_API = """
import http.server, sys
port, fails = int(sys.argv[1]), int(sys.argv[2])
seen = 0
class Healthz(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        global seen
        seen += 1
        code = 200 if self.path == "/healthz" and 0 <= fails < seen else 503
        self.send_response(code)
        self.end_headers()
        print(f"GET {self.path} {code}", flush=True)
    def log_message(self, *args):
        pass
http.server.HTTPServer(("127.0.0.1", port), Healthz).serve_forever()
"""


@pytest.fixture
async def settings(tmp_path: Path) -> AsyncIterator[Settings]:
    settings = Settings.from_env({"FORGE_HOME": str(tmp_path / "forge-home")})
    server = DevServer()
    await server.up(settings)
    try:
        yield settings
    finally:
        await server.down(settings)


@pytest.fixture
async def spawned() -> AsyncIterator[list[int]]:
    pids: list[int] = []
    yield pids
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        assert await wait_gone(pid, 60), pid


async def _record(
    settings: Settings, argv: list[str], port: int | None, pids: list[int]
) -> TopologyRecord:
    server = await DevServer().status(settings)
    assert server.running and server.address and server.pid
    log = settings.home / "api.log"
    pid = spawn(argv, dict(os.environ), log)
    pids.append(pid)
    api = ProcessRecord(
        name="api", kind="api", pid=pid, port=port, log=log, start_ticks=start_ticks(pid)
    )
    return TopologyRecord(
        shape=Shape(workers=0, api=True),
        started_at=datetime.now(UTC),
        temporal_address=server.address,
        temporal_pid=server.pid,
        temporal_log=server.log_path,
        environment={},
        processes=(api,),
    )


async def _api(settings: Settings, fails: int, pids: list[int]) -> TopologyRecord:
    port = free_port()
    return await _record(settings, [sys.executable, "-c", _API, str(port), str(fails)], port, pids)


async def test_waits_until_every_process_answers_its_probe(
    settings: Settings, spawned: list[int]
) -> None:
    record = await _api(settings, 3, spawned)
    before = await topology_status(settings, record)
    assert not before.running
    assert [(p.name, p.healthy) for p in before.processes] == [("temporal", True), ("api", False)]

    await wait_healthy(settings, record, timeout=240)

    after = await topology_status(settings, record)
    assert after.running, after
    answers = (settings.home / "api.log").read_text().splitlines()
    # It kept probing through the failures instead of returning on the first answer.
    assert answers[:3] == ["GET /healthz 503"] * 3
    assert "GET /healthz 200" in answers[3:]


async def test_a_process_never_healthy_or_gone_is_one_error_naming_it(
    settings: Settings, spawned: list[int]
) -> None:
    unhealthy = await _api(settings, -1, spawned)
    with pytest.raises(TopologyError) as never:
        await wait_healthy(settings, unhealthy, timeout=1)
    [pid] = spawned
    assert never.value.message == (
        f"api (pid {pid}) was not healthy within 1 s (GET /healthz: no answer); "
        f"see {settings.home / 'api.log'}"
    )
    assert "GET /healthz 503" in never.value.detail  # the tail of its log

    gone = await _record(settings, [sys.executable, "-c", "raise SystemExit(3)"], None, spawned)
    await wait_gone(spawned[-1], 60)
    with pytest.raises(TopologyError) as exited:
        await wait_healthy(settings, gone, timeout=240)
    assert exited.value.message == (
        f"api (pid {spawned[-1]}) exited during startup; see {settings.home / 'api.log'}"
    )
