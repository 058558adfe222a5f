"""Where N workers' time goes, read from the runs' Temporal histories (issue 37 §3).

`python -m tests.bench.scale_profile N [ROUNDS] [WORKLOAD]` starts `forge dev up --workers N
--api`, runs the scale bench's workload (billing or noop50) ROUNDS times, then reads every
workflow's history from the topology's Temporal server and prints, per N:

- workflow tasks per run, and how many went to the normal queue after the first (a sticky cache
  miss or a sticky schedule-to-start timeout: the history is replayed on another worker), and
  failed or timed-out workflow tasks;
- activity tasks: schedule-to-start (waiting for a slot) and start-to-close (running), median and
  90th percentile, and the most that ran at once (from the started/closed timestamps);
- per worker identity, how many activity tasks it ran;
- CPU-ms per step of each kind of process (dev server, API, workers, and the sandboxes the
  workers reaped), from /proc/PID/stat over the measured rounds.

Extra `FORGE_*` variables for the workers go in the environment as SCALE_PROFILE_ENV="A=1 B=2".
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import httpx
from temporalio.api.enums.v1 import EventType, TaskQueueKind
from temporalio.client import Client

from tests.bench import bench_scale
from tests.support.topology import dev_topology, operator_token
from tests.workflows.engine import billing_inputs, billing_plan
from tests.workflows.plans import lanes


def _pct(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _max_overlap(spans: list[tuple[float, float]]) -> int:
    edges = sorted([(s, 1) for s, _ in spans] + [(e, -1) for _, e in spans])
    running = peak = 0
    for _, d in edges:
        running += d
        peak = max(peak, running)
    return peak


async def history_figures(address: str, namespace: str) -> dict[str, Any]:
    """Workflow-task and activity-task figures over every workflow in the namespace."""
    client = await Client.connect(address, namespace=namespace)
    wft = normal_after_first = wft_failed = wft_timed_out = runs = 0
    to_start: list[float] = []
    to_close: list[float] = []
    spans: list[tuple[float, float]] = []
    by_worker: Counter[str] = Counter()
    async for wf in client.list_workflows():
        runs += 1
        history = await client.get_workflow_handle(wf.id, run_id=wf.run_id).fetch_history()
        scheduled: dict[int, float] = {}
        started: dict[int, tuple[float, str]] = {}
        first = True
        for e in history.events:
            t = e.event_time.ToNanoseconds() / 1e9
            if e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_SCHEDULED:
                wft += 1
                kind = e.workflow_task_scheduled_event_attributes.task_queue.kind
                if not first and kind == TaskQueueKind.TASK_QUEUE_KIND_NORMAL:
                    normal_after_first += 1
                first = False
            elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_FAILED:
                wft_failed += 1
            elif e.event_type == EventType.EVENT_TYPE_WORKFLOW_TASK_TIMED_OUT:
                wft_timed_out += 1
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                scheduled[e.event_id] = t
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
                a = e.activity_task_started_event_attributes
                started[e.event_id] = (t, a.identity)
                to_start.append(t - scheduled[a.scheduled_event_id])
            elif e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                a2 = e.activity_task_completed_event_attributes
                begun, who = started[a2.started_event_id]
                to_close.append(t - begun)
                spans.append((begun, t))
                by_worker[who] += 1
    return {
        "workflows": runs,
        "workflow_tasks": wft,
        "workflow_tasks_per_workflow": round(wft / runs, 1) if runs else 0,
        "normal_queue_after_first": normal_after_first,
        "workflow_tasks_failed": wft_failed,
        "workflow_tasks_timed_out": wft_timed_out,
        "activities": len(to_close),
        "schedule_to_start_s": {
            "median": round(statistics.median(to_start), 3) if to_start else 0,
            "p90": round(_pct(to_start, 0.9), 3),
        },
        "start_to_close_s": {
            "median": round(statistics.median(to_close), 3) if to_close else 0,
            "p90": round(_pct(to_close, 0.9), 3),
        },
        "most_at_once": _max_overlap(spans),
        "activities_by_worker": sorted(by_worker.values(), reverse=True),
    }


def _cpu_seconds(pid: int) -> tuple[float, float]:
    """(own, reaped children's) CPU seconds of a process: a worker's children are its sandboxes."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return (int(fields[11]) + int(fields[12])) / tick, (int(fields[13]) + int(fields[14])) / tick


def _process_cpu(status: dict[str, Any]) -> dict[str, tuple[float, float]]:
    found = {p["name"]: _cpu_seconds(p["pid"]) for p in status["processes"]}
    return found


async def _profile(
    topo_env: dict[str, str], url: str, token: str, rounds: int, which: str, status: Any
) -> Any:
    headers = {"Authorization": f"Bearer {token}"}
    with tempfile.TemporaryDirectory(prefix="forge-scale-profile-") as tmp:
        async with httpx.AsyncClient(base_url=url, headers=headers, timeout=120) as http:
            inputs = {
                n: await bench_scale._upload(http, p) for n, p in billing_inputs(Path(tmp)).items()
            }
            w = (
                bench_scale.Workload("billing", billing_plan(), 8, inputs)  # type: ignore[arg-type]
                if which == "billing"
                else bench_scale.Workload("noop50", lanes(50, 10), 4, {})
            )
            top = bench_scale.Topology(
                "profile", 0, http, [p["pid"] for p in status["processes"]], [w]
            )
            await bench_scale._round(top, w)  # warm-up, as the bench does
            before = _process_cpu(status)
            found = [await bench_scale._round(top, w) for _ in range(rounds)]
            after = _process_cpu(status)
    steps = w.steps * rounds
    kinds: dict[str, float] = defaultdict(float)
    for name, (own, kids) in after.items():
        kinds[name.split("-")[0]] += own - before[name][0]
        kinds["sandboxes"] += kids - before[name][1]
    address = topo_env["FORGE_TEMPORAL_ADDRESS"]
    namespace = topo_env.get("FORGE_NAMESPACE", "default")
    return {
        "rounds_runs_per_min": [round(r["runs_per_min"], 2) for r in found],
        "cpu_busy": [round(r["cpu_busy"], 3) for r in found],
        "cpu_ms_per_step": {k: round(v * 1000 / steps, 1) for k, v in kinds.items()},
        **await history_figures(address, namespace),
    }


def main() -> int:
    n = int(sys.argv[1])
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    which = sys.argv[3] if len(sys.argv) > 3 else "noop50"
    extra = dict(p.split("=", 1) for p in os.environ.get("SCALE_PROFILE_ENV", "").split())
    with dev_topology("--workers", str(n), "--api", env=extra) as topo:
        token = operator_token(topo.env)
        out = asyncio.run(_profile(topo.env, topo.api_url, token, rounds, which, topo.status))
    print(json.dumps({"workers": n, "workload": which, "env": extra, **out}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
