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
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import httpx

from schemas.event_catalogue import STEP_STARTED
from tests.api.server import Api, running_api
from tests.api.test_runs import finished
from tests.bench.bench_api import p95
from tests.bench.report import run_alone
from tests.temporal_env import temporal_test_env
from tests.workflows.plans import chain, lanes

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


async def _posted(http: httpx.AsyncClient, plan: dict[str, Any]) -> str:
    started = await http.post("/v1/runs", json={"plan": plan})
    if started.status_code != 201:
        raise RuntimeError(f"POST /v1/runs answered {started.status_code}: {started.text}")
    return str(started.json()["run_id"])


async def _step_events(api: Api, run_id: str) -> int:
    events = api.eng.services.events
    found = await asyncio.to_thread(events.list_events, run_id=run_id, type=STEP_STARTED)
    return len(found)


async def _first_step_ms(api: Api, http: httpx.AsyncClient) -> float:
    start = time.perf_counter()
    run_id = await _posted(http, chain(1))
    for _ in range(int(120 / POLL_S)):
        if await _step_events(api, run_id):
            ms = (time.perf_counter() - start) * 1000
            ended = await finished(http, run_id)
            if ended["status"] != "completed":
                raise RuntimeError(f"{run_id} ended {ended['status']}")
            return ms
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


async def _quiet_figures(api: Api, http: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    first = [await _first_step_ms(api, http) for _ in range(FIRST_STEP_RUNS)]
    return {"get_ms": await _get_ms(http, run_id, GETS), "first_step_ms": first}


@asynccontextmanager
async def _flood(api: Api) -> AsyncIterator[list[str]]:
    """A's maximum-size runs: FLOOD_RUNS at once, then one more every RESUBMIT_S."""
    plan = lanes(MAX_PLAN_STEPS, FLOOD_WIDTH)
    run_ids: list[str] = []
    async with api.client(NOISY, role="operator") as http:
        run_ids += await asyncio.gather(*(_posted(http, plan) for _ in range(FLOOD_RUNS)))
        for _ in range(int(300 / POLL_S)):
            counts = await asyncio.gather(*(_step_events(api, r) for r in run_ids))
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
                await api.eng.client.get_workflow_handle(run_id).terminate("bench over")


async def _measure(root: Path) -> dict[str, Any]:
    database = f"sqlite:///{root / 'forge.db'}"
    async with (
        temporal_test_env() as env,
        running_api(env, f"bench-{uuid.uuid4()}", root / "home", database) as api,
        api.client(QUIET, role="operator") as http,
    ):
        run_id = await _posted(http, chain(1))
        if (await finished(http, run_id))["status"] != "completed":
            raise RuntimeError(f"{run_id} did not complete")
        await _get_ms(http, run_id, WARMUP)
        await _first_step_ms(api, http)  # warm-up
        idle = await _quiet_figures(api, http, run_id)
        async with _flood(api) as flood_runs:
            loaded = await _quiet_figures(api, http, run_id)
            flood_steps = sum(await asyncio.gather(*(_step_events(api, r) for r in flood_runs)))
            flood_posted = len(flood_runs)
    return {"idle": idle, "loaded": loaded, "flood_runs": flood_posted, "flood_steps": flood_steps}


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


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-noisy-") as tmp:
        m = asyncio.run(_measure(Path(tmp)))
    idle, loaded = m["idle"], m["loaded"]
    flood = {
        "flood": f"{m['flood_runs']} runs of {MAX_PLAN_STEPS} steps POSTed by {NOISY}, "
        f"{m['flood_steps']} of their steps started by the end",
        "max_plan_steps": MAX_PLAN_STEPS,
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
            **flood,
        ),
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
