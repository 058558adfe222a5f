"""The HTTP API's latency against a bare FastAPI endpoint served the same way, in the same run.

One Temporal dev server, a ForgeWorker and `forge api`'s app (`tests/api/server.py`:
`running_api`, as the API tests bring it up: uvicorn in a thread on loopback, SQLite in a temp
dir, a tenant with a key per role), and beside it a bare FastAPI app with one `GET /ping`
returning `{"status": "ok"}`, served by uvicorn in a thread on loopback the same way. Both are
called with one `httpx.AsyncClient` each (keep-alive, sequential requests) from this process.

`api.get_run`: `GET /v1/runs/{id}` of a completed gated run with an operator's key (key
lookup, role check, the tenant check's one event read, Temporal's describe and the run's result
from its history) against `GET /ping`: WARMUP requests each, then ROUNDS rounds of PER_ROUND
requests each, interleaved and alternating which goes first, so drift on a shared machine hits
both. Figures: p50 and p95 per request, each as a ratio to the bare endpoint's.

`api.gate_decision`: GATE_RUNS runs (after one warm-up) of the gated plan of the gate tests
(`prepare`, then `ship` behind an approval gate for role ops, then `after`), each started with
`POST /v1/runs`; once `GET /v1/gates` shows its gate open, `POST
/v1/gates/{run_id}:{gate_id}/decision` approves it with an approver's key and is timed until its
answer. That answer is the earliest observable signal that the workflow resumed: the decision is
a Temporal update whose handler appends gate.decided.v1 (through the events__append activity)
before it returns, so a 200 means the workflow ran on the decision and recorded it (checked in
the event store after each run). The gated step's own step.started.v1 is no earlier signal: a
short attempt's start is written with its end (activities/harness/ledger.py: `flush_later`).
Reported alongside: the same decision sent as the Temporal update itself (`execute_update`
with the worker's client, no HTTP), GATE_RUNS runs interleaved with the HTTP ones, which shows
how much of the figure is Temporal's; and from the same POST until `GET /v1/runs/{id}` (a
workflow query) shows `ship` past awaiting_approval, polled every POLL_S after the answer. The
figure is dominated by Temporal's round trips (the update's workflow task, the append activity,
the workflow task that completes the update), not by the HTTP layer; its ratio is to the bare
endpoint's p50.

No goal was set for either (issue 19 asks for the figures): both are reported, not judged.

Run on its own with `python -m tests.bench.bench_api`.
"""

import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
from fastapi import FastAPI

from schemas.event_catalogue import GATE_DECIDED
from schemas.run import DecideGateInput, GateDecision
from schemas.scope import Actor
from tests.api.server import Api, ServedApp, running_api
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.bench.report import run_alone
from tests.temporal_env import temporal_test_env
from tests.workflows.test_gates import gated_plan
from workflows.run import CompiledRunWorkflow

WARMUP = 50
ROUNDS = 4
PER_ROUND = 50  # ROUNDS * PER_ROUND requests timed per endpoint
GATE_RUNS = 15  # timed gate decisions, after one warm-up run
POLL_S = 0.005
GATED_STEP = "ship"
BENCH_APPROVER = Actor(id="bench-approver", name="bench approver", role="ops", kind="system")


def bare_app() -> FastAPI:
    app = FastAPI()

    @app.get("/ping")
    def ping() -> dict[str, str]:
        return {"status": "ok"}

    return app


def p95(samples: list[float]) -> float:
    return statistics.quantiles(samples, n=20, method="inclusive")[18]


async def _timed(request: Callable[[], Awaitable[httpx.Response]]) -> float:
    start = time.perf_counter()
    response = await request()
    ms = (time.perf_counter() - start) * 1000
    if response.status_code != 200:
        raise RuntimeError(f"{response.request.url} answered {response.status_code}")
    return ms


async def _step_left_the_gate(http: httpx.AsyncClient, run_id: str) -> None:
    """Until the run's status view shows the gated step scheduled (or the run over)."""
    for _ in range(int(60 / POLL_S)):
        detail = (await http.get(f"/v1/runs/{run_id}")).json()
        if detail["workflow_status"] != "RUNNING":
            return
        states = {s["step_key"]: s["status"] for s in detail["view"]["steps"]}
        if states[GATED_STEP] not in ("pending", "awaiting_approval"):
            return
        await asyncio.sleep(POLL_S)
    raise RuntimeError(f"{GATED_STEP} of {run_id} never left its gate")


async def _gate_run(
    api: Api, ops: httpx.AsyncClient, approver: httpx.AsyncClient, *, direct: bool = False
) -> dict[str, Any]:
    """One gated run decided over HTTP (or, `direct`, by the Temporal update the API sends)."""
    started = await ops.post("/v1/runs", json={"plan": gated_plan()})
    if started.status_code != 201:
        raise RuntimeError(f"POST /v1/runs answered {started.status_code}: {started.text}")
    run_id = started.json()["run_id"]
    gate = await open_gate(approver, run_id)
    if direct:
        handle = api.eng.client.get_workflow_handle_for(CompiledRunWorkflow.run, run_id)
        inp = DecideGateInput(
            gate_id=gate["gate_id"],
            decision="approve",
            reason="bench",
            contract_hash=gate["contract_hash"],
            actor=BENCH_APPROVER,
        )
        start = time.perf_counter()
        await handle.execute_update("decide_gate", inp, result_type=GateDecision)
        decided_ms = (time.perf_counter() - start) * 1000
    else:
        body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "bench"}
        start = time.perf_counter()
        decided = await approver.post(f"/v1/gates/{gate['gate']}/decision", json=body)
        decided_ms = (time.perf_counter() - start) * 1000
        if decided.status_code != 200:
            raise RuntimeError(f"the decision answered {decided.status_code}: {decided.text}")
    await _step_left_the_gate(ops, run_id)
    scheduled_ms = (time.perf_counter() - start) * 1000
    ended = await finished(ops, run_id)
    if ended["status"] != "completed":
        raise RuntimeError(f"gated run {run_id} ended {ended['status']}: {ended}")
    events = api.eng.services.events
    recorded = await asyncio.to_thread(events.list_events, run_id=run_id, type=GATE_DECIDED)
    if len(recorded) != 1:
        raise RuntimeError(f"{len(recorded)} gate.decided events in {run_id}")
    return {"run_id": run_id, "decided_ms": decided_ms, "scheduled_ms": scheduled_ms}


async def _measure(root: Path) -> dict[str, Any]:
    database = f"sqlite:///{root / 'forge.db'}"
    async with (
        temporal_test_env() as env,
        running_api(env, f"bench-{uuid.uuid4()}", root / "home", database) as api,
    ):
        with ServedApp(bare_app(), name="bare-ping") as bare:
            async with (
                api.client(role="operator") as ops,
                api.client(role="approver") as approver,
                httpx.AsyncClient(base_url=bare.url, timeout=60) as plain,
            ):
                await _gate_run(api, ops, approver)  # warm-up
                await _gate_run(api, ops, approver, direct=True)
                gate_runs: list[dict[str, Any]] = []
                direct_runs: list[dict[str, Any]] = []
                for i in range(GATE_RUNS):  # interleaved, alternating which goes first
                    for direct in (False, True) if i % 2 == 0 else (True, False):
                        found = await _gate_run(api, ops, approver, direct=direct)
                        (direct_runs if direct else gate_runs).append(found)
                run_id = gate_runs[-1]["run_id"]

                def get_run() -> Awaitable[httpx.Response]:
                    return ops.get(f"/v1/runs/{run_id}")

                def ping() -> Awaitable[httpx.Response]:
                    return plain.get("/ping")

                for _ in range(WARMUP):
                    await _timed(get_run)
                    await _timed(ping)
                samples: dict[str, list[float]] = {"api": [], "bare": []}
                for i in range(ROUNDS):
                    pair = (("api", get_run), ("bare", ping))
                    for name, request in pair if i % 2 == 0 else pair[::-1]:
                        samples[name] += [await _timed(request) for _ in range(PER_ROUND)]
    return {
        "api_ms": samples["api"],
        "bare_ms": samples["bare"],
        "decided_ms": [r["decided_ms"] for r in gate_runs],
        "scheduled_ms": [r["scheduled_ms"] for r in gate_runs],
        "direct_ms": [r["decided_ms"] for r in direct_runs],
    }


def _ms(samples: list[float]) -> list[float]:
    return [round(s, 1) for s in samples]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-api-") as tmp:
        m = asyncio.run(_measure(Path(tmp)))
    api50, api95 = statistics.median(m["api_ms"]), p95(m["api_ms"])
    bare50, bare95 = statistics.median(m["bare_ms"]), p95(m["bare_ms"])
    dec50, dec95 = statistics.median(m["decided_ms"]), p95(m["decided_ms"])
    sch50, sch95 = statistics.median(m["scheduled_ms"]), p95(m["scheduled_ms"])
    dir50, dir95 = statistics.median(m["direct_ms"]), p95(m["direct_ms"])
    n = ROUNDS * PER_ROUND
    bare = f"a bare FastAPI GET /ping (p50 {bare50:.2f} ms, p95 {bare95:.2f} ms)"
    return [
        {
            "name": "api.get_run",
            "n": n,
            "ms_p50": round(api50, 2),
            "ms_p95": round(api95, 2),
            "baseline": "GET /ping of a bare FastAPI app under uvicorn on loopback, same client, "
            "interleaved rounds",
            "baseline_ms_p50": round(bare50, 2),
            "baseline_ms_p95": round(bare95, 2),
            "ratio_to_baseline": round(api50 / bare50, 2),
            "ratio_p95_to_baseline_p95": round(api95 / bare95, 2),
            "meets_goal": None,
            "figure": f"GET /v1/runs/{{id}} of a completed run: p50 {api50:.2f} ms, "
            f"p95 {api95:.2f} ms (n={n})",
            "versus": f"p50 {api50 / bare50:.1f}×, p95 {api95 / bare95:.1f}× {bare}",
            "goal": "reported",
        },
        {
            "name": "api.gate_decision",
            "runs": GATE_RUNS,
            "signal": "the decision's 200: the workflow's decide_gate update returned, "
            "gate.decided.v1 appended",
            "ms_p50": round(dec50, 1),
            "ms_p95": round(dec95, 1),
            "ms_runs": _ms(m["decided_ms"]),
            "step_scheduled_ms_p50": round(sch50, 1),
            "step_scheduled_ms_p95": round(sch95, 1),
            "step_scheduled_ms_runs": _ms(m["scheduled_ms"]),
            "direct_update_ms_p50": round(dir50, 1),
            "direct_update_ms_p95": round(dir95, 1),
            "direct_update_ms_runs": _ms(m["direct_ms"]),
            "baseline": "the bare endpoint's p50 of api.get_run",
            "baseline_ms_p50": round(bare50, 2),
            "ratio_to_baseline": round(dec50 / bare50, 1),
            "ratio_p95_to_baseline_p50": round(dec95 / bare50, 1),
            "meets_goal": None,
            "figure": f"POST decision until the workflow resumed (its update returned, "
            f"gate.decided recorded): p50 {dec50:.1f} ms, p95 {dec95:.1f} ms (n={GATE_RUNS}); "
            f"the same update sent straight to Temporal: p50 {dir50:.1f} ms; until GET shows "
            f"the gated step scheduled: p50 {sch50:.1f} ms",
            "versus": f"p50 {dec50 / bare50:.0f}×, p95 {dec95 / bare50:.0f}× the bare "
            f"endpoint's p50 ({bare50:.2f} ms): Temporal's workflow-task round trips",
            "goal": "reported",
        },
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
