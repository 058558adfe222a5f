"""Durability: a killed worker and a restarted Temporal server do not lose or duplicate work."""

import asyncio
import os
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path

from activities.sandbox import sweep
from activities.store.events import open_event_store
from schemas.run import RunInput
from schemas.run_source import PlanSource
from schemas.scope import Scope
from tests.workflows.engine import forge_client, wait_for_event
from tests.workflows.plans import code_step, plan, write_json
from workers.process.devserver import DevServer
from workers.process.worker import Services
from workers.services import runs
from workers.settings import Settings

# Ticks into its workspace for 12 s: a killed attempt's sandbox must die long before that.
SLOW = (
    "import time\n"
    "for _ in range(120):\n"
    "    with open('work/tick', 'a') as f:\n"
    "        f.write('.')\n"
    "    time.sleep(0.1)\n"
)


def _slow_plan() -> dict:
    return plan(
        code_step("first", write_json("output/first.json"), ["output/first.json"]),
        code_step(
            "slow",
            SLOW + write_json("output/slow.json"),
            ["output/slow.json"],
            depends_on=["first"],
            reads=["output/first.json"],
        ),
        code_step(
            "last",
            write_json("output/last.json"),
            ["output/last.json"],
            depends_on=["slow"],
            reads=["output/slow.json"],
        ),
    )


def _worker(home: Path, address: str, task_queue: str) -> subprocess.Popen[bytes]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FORGE_HOME": str(home),
        "FORGE_TEMPORAL_ADDRESS": address,
        "FORGE_TASK_QUEUE": task_queue,
    }
    forge = Path(sys.executable).parent / "forge"
    return subprocess.Popen(
        [str(forge), "worker"],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def _wait_for_event(home: Path, run_id: str, type_: str, step: str) -> None:
    store = open_event_store(f"sqlite:///{home / 'forge.db'}")
    await wait_for_event(store, run_id, type_, step)


def _assert_exactly_once(settings: Settings, run_id: str) -> None:
    store = open_event_store(settings.database_url)
    published = store.list_published(run_id)
    assert sorted(p.path for p in published) == [
        "output/first.json",
        "output/last.json",
        "output/slow.json",
    ]
    assert {p.version for p in published} == {1}
    events = store.list_events(run_id=run_id)
    once = Counter(
        (e.type, e.payload.get("step_key"), e.payload.get("artifact", {}).get("path"))
        for e in events
        if e.type in ("step.completed.v1", "artifact.published.v1", "run.completed.v1")
    )
    assert set(once.values()) == {1}, once
    assert store.verify_chain("default").ok


async def test_sigkilled_worker_is_replaced_and_the_run_completes_once(
    temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    settings = Settings(home=home, task_queue=task_queue)
    services = Services.from_settings(settings)
    client = await forge_client(temporal_env)
    address = temporal_env.client.service_client.config.target_host
    document = _slow_plan()
    ref = services.artifacts.put_bytes(
        Scope.default(), runs.plan_bytes(document), logical_path="meta/p.json"
    )
    run = RunInput(run_id=runs.new_run_id(), source=PlanSource(plan_ref=ref))
    first = _worker(home, address, task_queue)
    second = None
    try:
        handle = await runs.start_run(client, settings, run)
        await _wait_for_event(home, run.run_id, "step.started.v1", "slow")
        await asyncio.sleep(1)
        # The worker alone (its sandboxes lead their own sessions): they must die with it.
        os.kill(first.pid, signal.SIGKILL)
        first.wait()
        await _no_launcher_of(first.pid)
        tick = settings.workspace_root / run.run_id / "slow" / "attempt-1" / "work" / "tick"
        written = await _settled_size(tick)
        await asyncio.sleep(1)
        assert tick.stat().st_size == written  # nothing writes to the dead attempt's workspace
        second = _worker(home, address, task_queue)
        result = await asyncio.wait_for(handle.result(), timeout=180)
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
    assert result.status == "completed"
    assert result.steps["slow"].attempts >= 2  # the killed attempt was retried
    _assert_exactly_once(settings, run.run_id)


async def _settled_size(path: Path) -> int:
    """The file's size once it stops changing: 5 s at most.

    The kernel kills a dead sandbox's processes after its launcher is gone, not with it: a
    write already under way may still land. A sandbox left running writes every 0.1 s and
    never settles.
    """
    size = path.stat().st_size
    for _ in range(25):
        await asyncio.sleep(0.2)
        now = path.stat().st_size
        if now == size:
            return size
        size = now
    raise AssertionError(f"{path} still grows {size} bytes later: a sandbox outlived its worker")


async def _no_launcher_of(worker: int) -> None:
    """Wait until no sandbox launcher started by `worker` is left: 5 s at most."""
    for _ in range(600):  # a minute: a loaded machine reaps slowly
        left = [p for p, _, _, argv in sweep._processes() if sweep.launcher_parent(argv) == worker]
        if not left:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"sandbox launchers {left} outlived their worker {worker}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_embedded_server_restart_mid_run(tmp_path, task_queue):
    home = tmp_path / "home"
    settings = Settings(home=home, task_queue=task_queue, dev_server_port=_free_port())
    server = DevServer()
    await server.up(settings)
    try:
        async with engine_on(settings) as eng:
            handle = await eng.start(_slow_plan())
            await _wait_for_event(home, handle.id, "step.started.v1", "slow")
            assert await server.down(settings)
            await asyncio.sleep(1)
            await server.up(settings)
            result = await asyncio.wait_for(handle.result(), timeout=180)
        assert result.status == "completed"
        _assert_exactly_once(settings, handle.id)
    finally:
        await server.down(settings)


def engine_on(settings: Settings):
    """An engine whose client talks to the embedded server of `settings`."""
    from contextlib import asynccontextmanager

    @asynccontextmanager
    async def go():
        import concurrent.futures

        from tests.workflows.engine import Engine
        from workers.process.worker import build_worker

        services = Services.from_settings(settings)
        client = await runs.connect(settings)
        slots = settings.worker_activity_slots
        with concurrent.futures.ThreadPoolExecutor(max_workers=slots) as pool:
            async with build_worker(client, settings, services, pool):
                yield Engine(client, settings, services)

    return go()
