"""A noisy neighbour (issue 35 §1): what one tenant sees while another floods the installation.

One Temporal dev server started as `forge dev` starts it (so with per-tenant fairness on the
task queue: workers/process/devserver.py, DYNAMIC_CONFIG_ARGS), a ForgeWorker and `forge api`'s
app over real HTTP on loopback (`tests/api/server.py`: `running_api`), two tenants: acme (B,
the quiet one) and globex (A, the flood).

B's two figures, each measured idle and then again while A floods, in the same run:

- `GET /v1/runs/{id}` of one of B's completed runs with B's operator key: GETS sequential
  requests (after WARMUP), p95.
- Time to first step: B POSTs a one-step plan (`POST /v1/runs`) and the clock runs until its
  step.started.v1 is in the event log (read from the store, not through the API or the worker;
  a short attempt writes its start with its end, so this is the step done). FIRST_STEP_RUNS
  runs one after another, median.

A's flood: FLOOD_RUNS runs of the largest plan POST /v1/runs accepts today (MAX_PLAN_STEPS code
steps, FLOOD_WIDTH of them ready at once), POSTed before B's loaded figures are taken, and one
more every RESUBMIT_S while they are; B's loaded figures start once A's steps are flowing (the
worker's activity slots are A's and A's ready steps queue behind them). A's runs are terminated
at the end. The figures are ratios to B's idle ones; the goal is ≤ 2× for both.

Everything but the dev server runs in this one process (the API in a thread, the worker on this
event loop), as the API tests run it: the flood's CPU competes with B's requests for the GIL
here, which a deployment with `forge api` and `forge worker` as processes of their own does not
suffer. The machine is shared, so single runs are noisy: use `--repeat`.

Run on its own with `python -m tests.bench.bench_noisy` (or `make bench BENCH=noisy`).
"""

import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from temporalio.client import Client, WorkflowHistory

from activities.store.access import open_access_store
from activities.store.events import EventStore, open_event_store
from schemas.event_catalogue import STEP_STARTED
from schemas.scope import Actor
from tests.api.server import ApiServer
from tests.api.test_runs import finished
from tests.bench.bench_api import p95
from tests.bench.report import run_alone
from tests.temporal_env import temporal_test_env
from tests.workflows.plans import chain, lanes
from workers.settings import Settings

QUIET, NOISY = "acme", "globex"  # B and A
WARMUP = 20
GETS = 150  # timed GETs per phase
FIRST_STEP_RUNS = 6  # timed one-step runs per phase
# The largest plan the API accepts today: the default profile's budgets.max_steps (compile
# refuses more, COMPILE_MAX_STEPS). Raise it here when POST /v1/runs's request limits (issue 35,
# the limits branch) set their own maximum.
MAX_PLAN_STEPS = 200
FLOOD_WIDTH = 16  # of a flood run's steps ready at once (lanes)
FLOOD_RUNS = 4  # A's runs POSTed before B's loaded figures are taken
RESUBMIT_S = 2.0  # and one more every this while they are
FLOWING_STEPS = 16  # A's steps started before the loaded phase begins
POLL_S = 0.01
GOAL = 2.0


@dataclass
class Installation:
    url: str
    tokens: dict[str, str]  # tenant -> an operator's key
    events: EventStore
    temporal: Client

    def client(self, tenant: str) -> httpx.AsyncClient:
        headers = {"Authorization": f"Bearer {self.tokens[tenant]}"}
        return httpx.AsyncClient(base_url=self.url, headers=headers, timeout=120)


@contextmanager
def _worker(settings: Settings) -> Iterator[None]:
    """`forge worker` as a process of its own, on the installation's settings."""
    env = {
        "PATH": os.environ.get("PATH", ""),
        "FORGE_HOME": str(settings.home),
        "FORGE_TEMPORAL_ADDRESS": str(settings.temporal_address),
        "FORGE_TASK_QUEUE": settings.task_queue,
        "FORGE_DATABASE_URL": settings.database_url,
    }
    # `python -m` from this checkout: the venv's `forge` script may be an editable install of
    # another one, and the worker would run that checkout's code.
    worker = subprocess.Popen(
        [sys.executable, "-m", "workers.cli", "worker"],
        cwd=Path(__file__).resolve().parents[2],
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        yield
    finally:
        worker.send_signal(signal.SIGINT)
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


@asynccontextmanager
async def _installation(root: Path) -> AsyncIterator[Installation]:
    """The API (a thread here) and a worker (its own process), as a deployment runs them."""
    async with temporal_test_env() as env:
        settings = Settings(
            home=root / "home",
            task_queue=f"bench-{uuid.uuid4()}",
            temporal_address=env.client.service_client.config.target_host,
            database_url=f"sqlite:///{root / 'forge.db'}",
        )
        tokens = {}
        with open_access_store(settings.database_url) as access:
            for tenant in (QUIET, NOISY):
                access.create_tenant(tenant, created_by="bench")
                actor = Actor(id=f"{tenant}-ops", name=tenant, role="operator", kind="system")
                tokens[tenant] = access.create_key(tenant, "operator", actor).token
        with (
            open_event_store(settings.database_url) as events,
            ApiServer(settings) as api,
            _worker(settings),
        ):
            yield Installation(api.url, tokens, events, env.client)


async def _posted(http: httpx.AsyncClient, plan: dict[str, Any]) -> str:
    started = await http.post("/v1/runs", json={"plan": plan})
    if started.status_code != 201:
        raise RuntimeError(f"POST /v1/runs answered {started.status_code}: {started.text}")
    return str(started.json()["run_id"])


async def _step_events(site: Installation, run_id: str) -> int:
    events = site.events
    found = await asyncio.to_thread(events.list_events, run_id=run_id, type=STEP_STARTED)
    return len(found)


def _waited_ms(history: WorkflowHistory) -> dict[str, float]:
    """How long the run's activity and workflow tasks waited, scheduled to started: in all,
    and the activities' count."""
    scheduled: dict[int, datetime] = {}
    waits = {"activity": 0.0, "workflow": 0.0, "activities": 0}
    for e in history.events:
        at = e.event_time.ToDatetime()
        if e.HasField("activity_task_scheduled_event_attributes") or e.HasField(
            "workflow_task_scheduled_event_attributes"
        ):
            scheduled[e.event_id] = at
        elif e.HasField("activity_task_started_event_attributes"):
            since = scheduled[e.activity_task_started_event_attributes.scheduled_event_id]
            waits["activity"] += (at - since).total_seconds() * 1000
            waits["activities"] += 1
        elif e.HasField("workflow_task_started_event_attributes"):
            since = scheduled[e.workflow_task_started_event_attributes.scheduled_event_id]
            waits["workflow"] += (at - since).total_seconds() * 1000
    return waits


async def _first_step(site: Installation, http: httpx.AsyncClient) -> dict[str, float]:
    """B's one-step run: until its step ran; and how long its tasks waited in the queue."""
    start = time.perf_counter()
    run_id = await _posted(http, chain(1))
    post_ms = (time.perf_counter() - start) * 1000
    for _ in range(int(120 / POLL_S)):
        if await _step_events(site, run_id):
            ms = (time.perf_counter() - start) * 1000
            ended = await finished(http, run_id)
            if ended["status"] != "completed":
                raise RuntimeError(f"{run_id} ended {ended['status']}")
            history = await site.temporal.get_workflow_handle(run_id).fetch_history()
            waits = _waited_ms(history)
            return {
                "ms": ms,
                "post_ms": post_ms,
                "activity_queued_ms": waits["activity"],
                "activities": waits["activities"],
                "wft_queued_ms": waits["workflow"],
            }
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{run_id} started no step in 120 s")


async def _get_ms(http: httpx.AsyncClient, run_id: str, n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        response = await http.get(f"/v1/runs/{run_id}")
        samples.append((time.perf_counter() - start) * 1000)
        if response.status_code != 200:
            raise RuntimeError(f"GET /v1/runs/{run_id} answered {response.status_code}")
    return samples


async def _quiet_figures(
    site: Installation, http: httpx.AsyncClient, run_id: str
) -> dict[str, Any]:
    first = [await _first_step(site, http) for _ in range(FIRST_STEP_RUNS)]
    return {
        "get_ms": await _get_ms(http, run_id, GETS),
        **{f"first_step_{k}": [f[k] for f in first] for k in first[0]},
    }


@asynccontextmanager
async def _flood(site: Installation) -> AsyncIterator[list[str]]:
    """A's maximum-size runs: FLOOD_RUNS at once, then one more every RESUBMIT_S."""
    plan = lanes(MAX_PLAN_STEPS, FLOOD_WIDTH)
    run_ids: list[str] = []
    async with site.client(NOISY) as http:
        run_ids += await asyncio.gather(*(_posted(http, plan) for _ in range(FLOOD_RUNS)))
        for _ in range(int(300 / POLL_S)):
            counts = await asyncio.gather(*(_step_events(site, r) for r in run_ids))
            if sum(counts) >= FLOWING_STEPS:
                break
            await asyncio.sleep(POLL_S * 10)
        else:
            raise RuntimeError("the flood's steps never started")

        async def resubmit() -> None:
            while True:
                await asyncio.sleep(RESUBMIT_S)
                run_ids.append(await _posted(http, plan))

        more = asyncio.create_task(resubmit())
        try:
            yield run_ids
        finally:
            more.cancel()
            await asyncio.gather(more, return_exceptions=True)
            for run_id in run_ids:
                await site.temporal.get_workflow_handle(run_id).terminate("bench over")


async def _measure(root: Path) -> dict[str, Any]:
    async with _installation(root) as site, site.client(QUIET) as http:
        run_id = await _posted(http, chain(1))
        if (await finished(http, run_id))["status"] != "completed":
            raise RuntimeError(f"{run_id} did not complete")
        await _get_ms(http, run_id, WARMUP)
        await _first_step(site, http)  # warm-up
        idle = await _quiet_figures(site, http, run_id)
        async with _flood(site) as flood_runs:
            loaded = await _quiet_figures(site, http, run_id)
            flood_steps = sum(await asyncio.gather(*(_step_events(site, r) for r in flood_runs)))
            flood_posted = len(flood_runs)
            first = site.temporal.get_workflow_handle(flood_runs[0])
            flood_waits = _waited_ms(await first.fetch_history())
    return {
        "idle": idle,
        "loaded": loaded,
        "flood_runs": flood_posted,
        "flood_steps": flood_steps,
        "flood_activity_queued_ms": flood_waits["activity"] / max(1, flood_waits["activities"]),
    }


def _figure(name: str, idle: float, loaded: float, what: str, **extra: Any) -> dict[str, Any]:
    ratio = loaded / idle
    return {
        "name": name,
        **extra,
        "ms_idle": round(idle, 1),
        "ms_loaded": round(loaded, 1),
        "baseline": f"the same {what} while the other tenant is idle, same run",
        "ratio_to_baseline": round(ratio, 2),
        "meets_goal": ratio <= GOAL,
        "figure": f"{what} while another tenant floods: {loaded:.1f} ms",
        "versus": f"{ratio:.2f}× idle ({idle:.1f} ms)",
        "goal": f"≤ {GOAL:.0f}× idle",
    }


def _per_activity(figures: dict[str, Any]) -> float:
    waited = sum(figures["first_step_activity_queued_ms"])
    return waited / max(1, sum(figures["first_step_activities"]))


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-noisy-") as tmp:
        m = asyncio.run(_measure(Path(tmp)))
    idle, loaded = m["idle"], m["loaded"]
    flood = {
        "flood": f"{m['flood_runs']} runs of {MAX_PLAN_STEPS} steps POSTed by {NOISY}, "
        f"{m['flood_steps']} of their steps started by the end",
        "max_plan_steps": MAX_PLAN_STEPS,
    }
    # Where the time went: fairness keeps the quiet tenant's tasks from queueing behind the
    # flood (its activities' wait against the flood's own); what remains is the flood's CPU.
    queued = {
        "post_ms_idle": round(statistics.median(idle["first_step_post_ms"]), 1),
        "post_ms_loaded": round(statistics.median(loaded["first_step_post_ms"]), 1),
        "activity_queued_ms_per_task_idle": round(_per_activity(idle), 1),
        "activity_queued_ms_per_task_loaded": round(_per_activity(loaded), 1),
        "flood_activity_queued_ms_per_task": round(m["flood_activity_queued_ms"], 1),
        "workflow_task_queued_ms_per_run_idle": round(
            statistics.median(idle["first_step_wft_queued_ms"]), 1
        ),
        "workflow_task_queued_ms_per_run_loaded": round(
            statistics.median(loaded["first_step_wft_queued_ms"]), 1
        ),
    }
    return [
        _figure(
            "noisy.get_run_p95",
            p95(idle["get_ms"]),
            p95(loaded["get_ms"]),
            f"{QUIET}'s GET /v1/runs/{{id}} p95 (n={GETS})",
            **flood,
        ),
        _figure(
            "noisy.first_step",
            statistics.median(idle["first_step_ms"]),
            statistics.median(loaded["first_step_ms"]),
            f"{QUIET}'s POST /v1/runs until its first step ran, median (n={FIRST_STEP_RUNS})",
            ms_idle_runs=[round(x) for x in idle["first_step_ms"]],
            ms_loaded_runs=[round(x) for x in loaded["first_step_ms"]],
            **queued,
            **flood,
        ),
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
