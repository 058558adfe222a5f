"""Scale, measured (issue 37 §3): throughput with 1, 2 and 4 worker processes.

For each worker count N, `forge dev up --workers N --api` (a subprocess, as a user runs it: a
dev server, `forge api` and N `forge worker` processes sharing the SQLite store under
FORGE_HOME) and, over real HTTP with an operator key, two workloads:

- billing: BILLING_RUNS runs of the billing-audit demo (examples/billing-audit, its frozen plan,
  inputs uploaded once with POST /v1/uploads) POSTed at once;
- no-op: NOOP_RUNS runs of NOOP_STEPS code steps that each write one small file (lanes of
  NOOP_WIDTH, so a run has NOOP_WIDTH steps ready at once) POSTed at once.

A workload's window runs from the first POST until every run is no longer RUNNING (each must
have completed); its figures are runs/min and steps/s over that window, the busy fraction of the
machine's CPUs over it (/proc/stat: everything but idle and iowait) and the share of the machine's
CPU time the topology's own processes used (/proc/PID/stat of the dev server, the API and the
workers, with the sandboxes they reaped): the difference is other processes' load. That CPU
time over the workload's steps, CPU-ms per step, is what a step costs the topology whatever else
runs on the machine.

The three topologies run side by side; after WARMUP rounds, ROUNDS rounds each measure every
workload on every topology in turn, each round starting from another topology, so that a burst of
load from elsewhere on a shared machine falls on all of them alike. The median round (by runs/min)
per workload and topology is reported.

`bench_scale_sizing` runs the same rounds with variants beside them (other FORGE_WORKER_*
settings), for sizing a worker's concurrency (docs/scaling.md).

The baseline is the best of 1 and 2 workers in the same run; the goal is 4 workers ≥ 0.95× that
(adding workers never costs throughput). `make bench BENCH=scale REPEAT=5` repeats the whole
bench and reports, per figure, the run with the median ratio.

Run on its own with `python -m tests.bench.bench_scale` (or `make bench BENCH=scale`).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from tests.api.test_runs import finished
from tests.bench.report import run_alone
from tests.support.topology import RunningTopology, dev_topology, operator_token
from tests.workflows.engine import billing_inputs, billing_plan
from tests.workflows.plans import lanes

WORKERS = (1, 2, 4)
# name -> (workers, their FORGE_WORKER_* settings); bench_scale_sizing adds its variants.
Configurations = dict[str, tuple[int, dict[str, str]]]
CONFIGURATIONS: Configurations = {f"workers_{n}": (n, {}) for n in WORKERS}
BILLING_RUNS = 8  # billing-demo runs POSTed at once per round
NOOP_RUNS = 4  # 50-step runs POSTed at once per round
NOOP_STEPS = 50
NOOP_WIDTH = 10
WARMUP = 1  # rounds per workload and topology before the measured ones: imports, caches
ROUNDS = 5  # measured rounds per workload and topology; the median is kept
GOAL = 0.95
# `forge dev up` flags besides --workers; add "--postgres" to measure on PostgreSQL instead of
# the embedded SQLite store.
TOPOLOGY_FLAGS: tuple[str, ...] = ("--api",)


@dataclass(frozen=True)
class Workload:
    name: str
    plan: dict[str, Any]
    runs: int
    inputs: dict[str, str]

    @property
    def steps(self) -> int:
        return self.runs * len(self.plan["steps"])


def cpu_ticks() -> tuple[int, int]:
    """(busy, total) jiffies of all CPUs since boot, from /proc/stat's first line."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + fields[4]  # idle + iowait
    return sum(fields) - idle, sum(fields)


def busy_fraction(before: tuple[int, int], after: tuple[int, int]) -> float:
    total = after[1] - before[1]
    return (after[0] - before[0]) / total if total else 0.0


async def _post(http: httpx.AsyncClient, w: Workload) -> str:
    body: dict[str, Any] = {"plan": w.plan}
    if w.inputs:
        body["inputs"] = w.inputs
    started = await http.post("/v1/runs", json=body)
    if started.status_code != 201:
        raise RuntimeError(
            f"POST /v1/runs ({w.name}) answered {started.status_code}: {started.text}"
        )
    return str(started.json()["run_id"])


async def _finished(http: httpx.AsyncClient, run_id: str) -> dict[str, Any]:
    for _ in range(20):  # tests.api.test_runs.finished waits 60 s a call; a loaded round waits more
        try:
            return dict(await finished(http, run_id))
        except AssertionError:
            continue
    raise RuntimeError(f"run {run_id} still RUNNING after 20 minutes")


def _cpu_seconds(pid: int) -> float:
    """CPU seconds of a process and of its children it reaped (a worker's are its sandboxes)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / os.sysconf("SC_CLK_TCK")


def topology_cpu(pids: list[int]) -> float:
    """CPU seconds the topology's processes (and their reaped children) have used so far."""
    return sum(_cpu_seconds(p) for p in pids)


@dataclass
class Topology:
    name: str  # workers_N, or a VARIANTS name
    workers: int
    http: httpx.AsyncClient
    pids: list[int]  # the dev server's, the API's and the workers'
    workloads: list[Workload]
    rounds: dict[str, list[dict[str, float]]] = field(default_factory=dict)


async def _round(top: Topology, w: Workload) -> dict[str, float]:
    cpu, ours = cpu_ticks(), topology_cpu(top.pids)
    start = time.perf_counter()
    run_ids = await asyncio.gather(*(_post(top.http, w) for _ in range(w.runs)))
    ended = await asyncio.gather(*(_finished(top.http, r) for r in run_ids))
    seconds = time.perf_counter() - start
    after = cpu_ticks()
    busy = busy_fraction(cpu, after)
    machine_s = (after[1] - cpu[1]) / os.sysconf("SC_CLK_TCK")  # every CPU's seconds
    bad = [
        (r, d["status"]) for r, d in zip(run_ids, ended, strict=True) if d["status"] != "completed"
    ]
    if bad:
        raise RuntimeError(f"{w.name}: runs did not complete: {bad}")
    return {
        "seconds": seconds,
        "runs_per_min": w.runs * 60 / seconds,
        "steps_per_s": w.steps / seconds,
        "cpu_busy": busy,
        # The share of the machine's CPU time this topology used: the rest of cpu_busy is
        # other processes (on a shared machine, other sessions' work).
        "cpu_topology": (topology_cpu(top.pids) - ours) / machine_s if machine_s else 0.0,
        # What a step costs the topology whatever else runs on the machine.
        "cpu_ms_per_step": (topology_cpu(top.pids) - ours) * 1000 / w.steps,
    }


async def _upload(http: httpx.AsyncClient, path: Path) -> dict[str, str]:
    answer = await http.post("/v1/uploads", files={"file": (path.name, path.read_bytes())})
    if answer.status_code != 201:
        raise RuntimeError(f"POST /v1/uploads {path.name} answered {answer.status_code}")
    return {"sha256": answer.json()["sha256"], "filename": path.name}


async def _open(
    stack: contextlib.AsyncExitStack, name: str, n: int, topo: RunningTopology, data: Path
) -> Topology:
    token = operator_token(topo.env)
    headers = {"Authorization": f"Bearer {token}"}
    http = await stack.enter_async_context(
        httpx.AsyncClient(base_url=topo.api_url, headers=headers, timeout=120)
    )
    inputs = {name: await _upload(http, p) for name, p in billing_inputs(data).items()}
    workloads = [
        Workload("billing", billing_plan(), BILLING_RUNS, inputs),  # type: ignore[arg-type]
        Workload("noop50", lanes(NOOP_STEPS, NOOP_WIDTH), NOOP_RUNS, {}),
    ]
    pids = [p["pid"] for p in topo.status["processes"]]
    return Topology(name, n, http, pids, workloads)


async def _measure(
    topologies: dict[str, tuple[int, RunningTopology]], data: Path
) -> dict[str, Any]:
    async with contextlib.AsyncExitStack() as stack:
        tops = [await _open(stack, name, n, t, data) for name, (n, t) in topologies.items()]
        for i in range(WARMUP + ROUNDS):
            # Each round measures every topology in turn, starting from a different one each
            # time, so a burst of other load on the machine falls on all of them alike.
            order = tops[i % len(tops) :] + tops[: i % len(tops)]
            for index in range(len(tops[0].workloads)):
                for top in order:
                    w = top.workloads[index]
                    done = await _round(top, w)
                    if i >= WARMUP:  # warm-up: imports, sandboxes, caches
                        top.rounds.setdefault(w.name, []).append(done)
        return {top.name: _medians(top) for top in tops}


def _medians(top: Topology) -> dict[str, dict[str, Any]]:
    out = {}
    for w in top.workloads:
        rounds = top.rounds[w.name]
        median = statistics.median_low(r["runs_per_min"] for r in rounds)
        chosen = next(r for r in rounds if r["runs_per_min"] == median)
        out[w.name] = {
            **chosen,
            "rounds_runs_per_min": [round(r["runs_per_min"], 2) for r in rounds],
            "rounds_cpu_topology": [round(r["cpu_topology"], 3) for r in rounds],
            "cpu_ms_per_step_median": statistics.median(r["cpu_ms_per_step"] for r in rounds),
            "runs": w.runs,
            "steps": w.steps,
        }
    return out


def measure(configurations: Configurations = CONFIGURATIONS) -> dict[str, dict[str, Any]]:
    """Per configuration, per workload: the median round's figures.

    The topologies run side by side (an idle one only waits on its long polls) so that their
    rounds can alternate.
    """
    with contextlib.ExitStack() as stack:
        topologies = {
            name: (
                n,
                stack.enter_context(dev_topology("--workers", str(n), *TOPOLOGY_FLAGS, env=extra)),
            )
            for name, (n, extra) in configurations.items()
        }
        data = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="forge-bench-scale-")))
        return asyncio.run(_measure(topologies, data))


def _describe(name: str, configurations: Configurations) -> str:
    n, extra = configurations[name]
    settings = ", ".join(f"{k}={v}" for k, v in extra.items())
    return f"{n} worker(s)" + (f" with {settings}" if settings else "")


def figures(
    found: dict[str, dict[str, Any]],
    configurations: Configurations = CONFIGURATIONS,
    prefix: str = "scale",
) -> list[dict[str, Any]]:
    results = []
    for workload in ("billing", "noop50"):
        best_name = max(
            ("workers_1", "workers_2"), key=lambda k: found[k][workload]["runs_per_min"]
        )
        best = found[best_name][workload]["runs_per_min"]
        for name, (workers, settings) in configurations.items():
            f = found[name][workload]
            ratio = f["runs_per_min"] / best
            what = (
                f"{f['runs']} billing-demo runs"
                if workload == "billing"
                else f"{f['runs']} runs of {NOOP_STEPS} no-op steps"
            )
            goal = name == "workers_4"
            this, base = _describe(name, configurations), _describe(best_name, configurations)
            results.append(
                {
                    "name": f"{prefix}.{workload}.{name}",
                    "workers": workers,
                    "settings": settings,
                    "runs_per_min": round(f["runs_per_min"], 2),
                    "steps_per_s": round(f["steps_per_s"], 2),
                    "cpu_busy": round(f["cpu_busy"], 3),
                    "cpu_topology": round(f["cpu_topology"], 3),
                    "rounds_cpu_topology": f["rounds_cpu_topology"],
                    "cpu_ms_per_step": round(f["cpu_ms_per_step_median"], 1),
                    "seconds": round(f["seconds"], 2),
                    "rounds_runs_per_min": f["rounds_runs_per_min"],
                    "baseline": f"the best of 1 and 2 workers, same run ({base}: "
                    f"{best:.2f} runs/min)",
                    "ratio_to_baseline": round(ratio, 3),
                    "meets_goal": ratio >= GOAL if goal else None,
                    "figure": f"{what} at once, {this}: {f['runs_per_min']:.2f} "
                    f"runs/min, {f['steps_per_s']:.2f} steps/s, CPU {f['cpu_busy']:.0%} busy "
                    f"({f['cpu_topology']:.0%} this topology's), "
                    f"{f['cpu_ms_per_step_median']:.0f} CPU-ms per step",
                    "versus": f"{ratio:.2f}× the best of 1 and 2 workers ({best:.2f} runs/min)",
                    "goal": f"≥ {GOAL}× the best of 1 and 2" if goal else "none (for sizing)",
                }
            )
    return results


def run() -> list[dict[str, Any]]:
    return figures(measure())


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
