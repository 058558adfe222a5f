"""docs/observability.md's walk from a slow run to its slow step, run live.

A real `forge worker` process (FORGE_METRICS_PORT=0) on the session's dev server serves the run
of examples/slow-step/plan.json; every command of the walk runs in order: `forge run --detach`,
the worker's /metrics through the page's `grep -E` pattern, then `forge status`, `forge events
timings` and `forge events list --step` about that run. What differs from run to run is mapped
back to what the page shows first: the run id (and the trace id derived from it), the port, and
the task queue (a fresh one as long as the page's `forge`, so lines wrap alike).
"""

from __future__ import annotations

import asyncio
import dataclasses
import re
import secrets
import shlex

import httpx
from temporalio.api.enums.v1 import TaskQueueType
from temporalio.client import Client

from tests.docs.running import assert_prints_shown, printed_by
from tests.docs.shown import ROOT, Shown, shown_commands
from tests.telemetry.test_metrics_endpoint import _recorded_port, _stop, _worker
from workers.services.queues import polled
from workers.telemetry.tracing import format_trace_id, run_trace_id

PAGE = ROOT / "docs" / "observability.md"
CLI_PAGE = ROOT / "docs" / "cli.md"  # its `forge events timings` example is about the same run
SECTION = "## From a slow run to its slow step"
RUN_ID = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")
PORT = re.compile(r"127\.0\.0\.1:(\d+)/metrics")
CURL = re.compile(r"^curl -s (\S+) \| grep -E '(.*)'$")
WAIT_S = 180


def walk() -> list[Shown]:
    """The walk's commands in the page's order, then docs/cli.md's about the walk's run."""
    text = PAGE.read_text()
    first = text[: text.index(SECTION)].count("\n") + 1
    shown = [s for s in shown_commands(PAGE) if int(s.source.rsplit(":", 1)[1]) > first]
    run_id = RUN_ID.search("\n".join(shown[0].output))
    assert run_id, f"{shown[0].source}: the walk's run shows no run id"
    return shown + [s for s in shown_commands(CLI_PAGE) if run_id.group(0) in s.command]


def test_the_walk_shows_these_commands():
    verbs = [shlex.split(s.command)[:3] for s in walk()]
    assert verbs[0][:2] == ["forge", "run"] and ["curl", "-s"] == verbs[1][:2]
    assert ["forge", "events", "timings"] in verbs and ["forge", "events", "list"] in verbs
    assert any(s.source.startswith("docs/cli.md") for s in walk())  # the --json example


def test_from_a_slow_run_to_its_slow_step(temporal_env, tmp_path, monkeypatch):
    home = tmp_path / "home"
    task_queue = f"q{secrets.token_hex(2)}"  # as long as the page's `forge`
    address = temporal_env.client.service_client.config.target_host
    monkeypatch.chdir(ROOT)
    for name, value in (
        ("FORGE_HOME", str(home)),
        ("FORGE_TEMPORAL_ADDRESS", address),
        ("FORGE_TASK_QUEUE", task_queue),
    ):
        monkeypatch.setenv(name, value)
    run, *about = walk()
    log = tmp_path / "worker.log"
    worker = _worker(home, address, task_queue, log)
    try:
        port = asyncio.run(_recorded_port(home, worker, log))
        asyncio.run(_polling(address, task_queue))
        printed = printed_by(run, run.command).replace(task_queue, "forge")
        assert_prints_shown(run, printed, str(home))
        shown_id, new_id = RUN_ID.search("\n".join(run.output)), RUN_ID.search(printed)
        assert shown_id and new_id, printed
        asyncio.run(_finished(address, new_id.group(0)))
        swap = {
            shown_id.group(0): new_id.group(0),
            format_trace_id(run_trace_id(shown_id.group(0))): format_trace_id(
                run_trace_id(new_id.group(0))
            ),
        }
        for shown in about:
            command = shown.command
            for old, new in swap.items():
                command = command.replace(old, new)
            output = list(shown.output)
            for old, new in swap.items():
                output = [line.replace(old, new) for line in output]
            expected = dataclasses.replace(shown, output=output)
            if command.startswith("curl "):
                printed = _curl(PORT.sub(f"127.0.0.1:{port}/metrics", command), expected)
            else:
                printed = printed_by(expected, command)
            assert_prints_shown(expected, printed, str(home))
    finally:
        _stop(worker)


async def _polling(address: str, task_queue: str) -> None:
    """Once the worker polls the queue (its port is recorded a moment before)."""
    client = await Client.connect(address)
    for _ in range(WAIT_S * 10):
        if await polled(client, task_queue, TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW):
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"no worker polled {task_queue}")


async def _finished(address: str, run_id: str) -> None:
    client = await Client.connect(address)
    await asyncio.wait_for(client.get_workflow_handle(run_id).result(), timeout=WAIT_S)


def _curl(command: str, shown: Shown) -> str:
    """`curl -s URL | grep -E 'PATTERN'`, once the worker's /metrics shows what is shown."""
    match = CURL.match(command)
    assert match, f"{shown.source}: not a `curl -s URL | grep -E '…'` line: {command}"
    url, pattern = match.groups()
    lines: list[str] = []
    for _ in range(300):  # Forge's instruments record as the step ends: no buffer to drain
        text = httpx.get(url, timeout=30).text
        lines = [line for line in text.splitlines() if re.search(pattern, line)]
        if lines and all(line in lines for line in shown.output if line.strip()):
            break
        asyncio.run(asyncio.sleep(0.1))
    return "\n".join(lines)
