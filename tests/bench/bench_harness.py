"""Per-step cost of the harness: 50 no-op steps through the engine against 50 bare sandbox spawns.

Both sides run on the same Temporal dev server, one step at a time, and spawn the same sandboxed
process (`python /workspace/meta/step.py` under bwrap with the default profile's limits). The
difference per step is what the harness adds: compile, receipts, stores, events, payloads.
"""

import asyncio
import concurrent.futures
import functools
import shutil
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio import activity, workflow
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from activities.compile.typelib import load_profiles
from activities.harness import program
from activities.sandbox.runner import run_sandboxed
from activities.store.events import EventStore
from tests.bench.bench_sandbox import default_limits
from tests.bench.harness_breakdown import GROUPS, UNACCOUNTED, Clock, breakdown, instrumented
from tests.temporal_env import temporal_test_env
from tests.workflows.engine import Engine, engine
from tests.workflows.plans import code_step, plan, write_json

STEPS = 50
ROUNDS = 2  # each side runs twice; the faster run is kept (warm-up effects)
WARM_STEPS = 10  # an unmeasured run of each side first: a new worker's first steps are cold
SETTLE_S = 2.0  # the pause before each side's worker starts (another one has just stopped)
GOAL_RATIO = 1.3
GOAL_OVERHEAD_MS = 15.0
STEP_TIMEOUT = timedelta(minutes=5)


def step_code(i: int) -> str:
    return write_json(f"output/s{i}.json")  # {"ok": true}; "{}" is refused as a placeholder


def harness_plan(n: int = STEPS) -> dict[str, Any]:
    """n independent steps; step i writes output/s{i}.json."""
    return plan(*(code_step(f"s{i}", step_code(i), [f"output/s{i}.json"]) for i in range(n)))


def serial_profile() -> dict[str, Any]:
    """The built-in default profile with one step at a time."""
    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile["profile_id"] = "bench-serial"
    profile["budgets"]["max_parallel_steps"] = 1
    return profile


# --- the baseline: the same sandboxed process, no harness -------------------------------------


@dataclass
class BareSpawnInput:
    root: str
    index: int


@dataclass
class BareRunInput:
    root: str
    steps: int


# In-thread wall time of each bare_spawn and of its run_sandboxed call (two clock reads each).
BARE_TIMES: dict[str, list[float]] = defaultdict(list)


@activity.defn(name="bench__bare_spawn")
def bare_spawn(inp: BareSpawnInput) -> int:
    """A temp workspace, the step script in meta/, run_sandboxed: no receipts, stores or events."""
    start = time.perf_counter()
    workspace = Path(tempfile.mkdtemp(prefix=f"s{inp.index}-", dir=inp.root))
    try:
        (workspace / "meta").mkdir()
        (workspace / program.STEP_SCRIPT).write_text(step_code(inp.index))
        spawn = time.perf_counter()
        result = run_sandboxed(
            ["python", f"/workspace/{program.STEP_SCRIPT}"],
            workspace=workspace,
            limits=_limits(),
            isolation="bwrap",
            heartbeat=activity.heartbeat,
        )
        BARE_TIMES["run_sandboxed"].append((time.perf_counter() - spawn) * 1000)
        if result.exit_code != 0:
            raise RuntimeError(f"bare step {inp.index} failed: {result.stderr[-500:]}")
        return result.exit_code
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
        BARE_TIMES["activity"].append((time.perf_counter() - start) * 1000)


@functools.cache
def _limits() -> Any:
    return default_limits()


@workflow.defn(name="BenchBareSpawnWorkflow")
class BareSpawnWorkflow:
    """`steps` bare spawns, one after another."""

    @workflow.run
    async def run(self, inp: BareRunInput) -> int:
        for i in range(inp.steps):
            await workflow.execute_activity(
                bare_spawn,
                BareSpawnInput(root=inp.root, index=i),
                start_to_close_timeout=STEP_TIMEOUT,
            )
        return inp.steps


# --- measurement ------------------------------------------------------------------------------


@dataclass
class Timing:
    total_ms: float
    history: dict[str, float]  # mean ms per step activity, from the workflow history
    compile_ms: float | None = None
    inner: dict[str, float] | None = None  # in-thread ms per step (bare side only)


async def _history(handle: WorkflowHandle[Any, Any], activity_type: str) -> dict[str, float]:
    """Per-step means from server timestamps: dispatch, execution, and workflow turnaround."""
    scheduled: dict[int, float] = {}
    started: dict[int, float] = {}
    dispatch, execute, turnaround = [], [], []
    last_completed: float | None = None
    async for event in handle.fetch_history_events():
        t = event.event_time.ToDatetime().timestamp() * 1000
        if event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
            attrs = event.activity_task_scheduled_event_attributes
            if attrs.activity_type.name == activity_type:
                scheduled[event.event_id] = t
                if last_completed is not None:
                    turnaround.append(t - last_completed)
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED:
            sid = event.activity_task_started_event_attributes.scheduled_event_id
            if sid in scheduled:
                started[sid] = t
                dispatch.append(t - scheduled[sid])
        elif event.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
            sid = event.activity_task_completed_event_attributes.scheduled_event_id
            if sid in started:
                execute.append(t - started[sid])
                last_completed = t

    def mean(xs: list[float]) -> float:
        return sum(xs) / len(xs) if xs else 0.0

    return {
        "dispatch_ms": round(mean(dispatch), 2),
        "activity_ms": round(mean(execute), 2),
        "workflow_turnaround_ms": round(mean(turnaround), 2),
    }


def _compile_ms(events: EventStore, run_id: str) -> float | None:
    stamps = {
        e.type: e.timestamp
        for e in events.list_events(run_id=run_id, limit=10_000)
        if e.type in ("run.started.v1", "run.compiled.v1")
    }
    if len(stamps) != 2:
        return None
    return (stamps["run.compiled.v1"] - stamps["run.started.v1"]).total_seconds() * 1000


async def _run_harness(eng: Engine, document: dict[str, Any], profile: dict[str, Any]) -> Timing:
    start = time.perf_counter()
    handle = await eng.start(document, profile_document=profile)
    result = await handle.result()
    total = (time.perf_counter() - start) * 1000
    if result.status != "completed" or len(result.steps) != len(document["steps"]):
        raise RuntimeError(f"harness run {result.run_id} ended {result.status}")
    return Timing(
        total_ms=total,
        history=await _history(handle, "step__execute"),
        compile_ms=_compile_ms(eng.services.events, result.run_id),
    )


async def _run_bare(client: Client, task_queue: str, root: Path, steps: int = STEPS) -> Timing:
    start = time.perf_counter()
    handle = await client.start_workflow(
        BareSpawnWorkflow.run,
        BareRunInput(root=str(root), steps=steps),
        id=f"bench-bare-{uuid.uuid4()}",
        task_queue=task_queue,
    )
    BARE_TIMES.clear()
    await handle.result()
    total = (time.perf_counter() - start) * 1000
    inner = {k: sum(v) / steps for k, v in BARE_TIMES.items()}
    return Timing(total_ms=total, history=await _history(handle, "bench__bare_spawn"), inner=inner)


async def _measure(home: Path) -> tuple[Timing, Timing, Timing, dict[str, float]]:
    document, profile = harness_plan(), serial_profile()
    async with temporal_test_env() as env:
        bare_queue = f"bench-bare-{uuid.uuid4()}"
        bare_root = home / "bare"
        bare_root.mkdir(parents=True)
        with concurrent.futures.ThreadPoolExecutor(max_workers=8) as pool:
            ours: list[Timing] = []
            base: list[Timing] = []
            # Alternated, to share machine noise; each side runs warm, with no other worker up
            # and not right after one stopped: either slows a worker's workflow-task turnaround
            # (docs/benchmarks.md), which would tax whichever side ran second.
            for _ in range(ROUNDS):
                await asyncio.sleep(SETTLE_S)
                async with engine(env, home / "forge", f"bench-{uuid.uuid4()}") as eng:
                    await _run_harness(eng, harness_plan(WARM_STEPS), profile)
                    ours.append(await _run_harness(eng, document, profile))
                await asyncio.sleep(SETTLE_S)
                async with _bare_worker(env.client, bare_queue, pool):
                    await _run_bare(env.client, bare_queue, bare_root, WARM_STEPS)
                    base.append(await _run_bare(env.client, bare_queue, bare_root))
        # The breakdown comes from extra, instrumented runs on a worker built inside the patches
        # (it binds StepActivities.execute when built); they are not part of the figures above.
        kept: tuple[Timing, dict[str, float]] | None = None
        clock = Clock()
        await asyncio.sleep(SETTLE_S)
        with instrumented(clock):
            async with engine(env, home / "forge", f"bench-{uuid.uuid4()}") as eng:
                for _ in range(ROUNDS):  # the faster one is kept, like the figures above
                    clock.own.clear()
                    timing = await _run_harness(eng, document, profile)
                    if kept is None or timing.total_ms < kept[0].total_ms:
                        kept = timing, breakdown(clock.own, STEPS)
    if kept is None:
        raise RuntimeError("ROUNDS must be at least 1")
    best = functools.partial(min, key=lambda t: t.total_ms)
    return best(ours), best(base), kept[0], kept[1]


def _bare_worker(client: Client, task_queue: str, pool: concurrent.futures.Executor) -> Worker:
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[BareSpawnWorkflow],
        activities=[bare_spawn],
        activity_executor=pool,
        workflow_runner=UnsandboxedWorkflowRunner(),
        max_concurrent_activities=8,
    )


def _breakdown_text(parts: dict[str, float], ours: Timing, base: Timing) -> str:
    """Where a harness step's time goes, next to a bare spawn (ms per step).

    `parts` is `breakdown(...)` of the instrumented harness run `ours`; `base` the kept bare run.
    """
    inner = base.inner or {}
    execute = parts["total"]
    bare = inner.get("activity", 0.0)
    grouped = {g: sum(parts.get(k, 0.0) for k in labels) for g, labels in GROUPS.items()}
    named = {k for labels in GROUPS.values() for k in labels} | {UNACCOUNTED, "total"}
    other = sum(v for k, v in parts.items() if k not in named)
    # Server-seen activity time beyond the in-thread time: payload conversion and the RPCs.
    payload = ours.history["activity_ms"] - execute - (base.history["activity_ms"] - bare)
    turnaround = ours.history["workflow_turnaround_ms"] - base.history["workflow_turnaround_ms"]
    sandbox = grouped.pop("sandbox")
    return (
        f"activity {execute:.1f} vs bare {bare:.1f} (sandbox {sandbox:.1f} vs "
        f"{inner.get('run_sandboxed', 0.0):.1f}); "
        + ", ".join(f"{g} {ms:.1f}" for g, ms in grouped.items())
        + f", other {other:.1f}, unaccounted {parts[UNACCOUNTED]:.1f}; "
        f"payloads/RPC {payload:+.1f}; workflow turnaround {turnaround:+.1f}"
    )


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-harness-") as tmp:
        ours, base, instrumented, breakdown = asyncio.run(_measure(Path(tmp)))
    per_step = ours.total_ms / STEPS
    base_per_step = base.total_ms / STEPS
    ratio = ours.total_ms / base.total_ms
    overhead = per_step - base_per_step
    compile_ms = ours.compile_ms
    no_compile = per_step - (compile_ms or 0.0) / STEPS
    compile_text = f", compile {compile_ms:.0f} ms" if compile_ms is not None else ""
    parts = {k: round(v, 3) for k, v in breakdown.items()}
    return [
        {
            "name": f"harness.{STEPS}_noop_steps",
            "steps": STEPS,
            "ms": round(ours.total_ms, 1),
            "ms_per_step": round(per_step, 2),
            "compile_ms": None if compile_ms is None else round(compile_ms, 1),
            "ms_per_step_excluding_compile": round(no_compile, 2),
            "history": ours.history,
            "baseline": f"{STEPS} sequential bare activities spawning the same sandboxed process",
            "baseline_ms": round(base.total_ms, 1),
            "baseline_ms_per_step": round(base_per_step, 2),
            "baseline_history": base.history,
            "ratio_to_baseline": round(ratio, 3),
            "goal_ratio": GOAL_RATIO,
            "meets_goal": ratio <= GOAL_RATIO,
            "figure": f"{ours.total_ms:.0f} ms ({per_step:.1f} ms/step{compile_text})",
            "versus": f"{ratio:.2f}× bare spawns ({base.total_ms:.0f} ms, {base_per_step:.1f} "
            "ms/step)",
            "goal": f"≤ {GOAL_RATIO}×",
        },
        {
            "name": "harness.overhead_per_step",
            "ms_per_step": round(overhead, 2),
            "ms_per_step_excluding_compile": round(no_compile - base_per_step, 2),
            "baseline": f"harness.{STEPS}_noop_steps baseline per step",
            "goal_ms": GOAL_OVERHEAD_MS,
            "meets_goal": overhead <= GOAL_OVERHEAD_MS,
            "figure": f"{overhead:.1f} ms/step beyond process start "
            f"({no_compile - base_per_step:.1f} without compile)",
            "versus": f"{per_step:.1f} − {base_per_step:.1f} ms/step (bare spawn)",
            "goal": f"≤ {GOAL_OVERHEAD_MS:.0f} ms",
        },
        {
            "name": "harness.breakdown_per_step",
            "baseline": "bare_spawn activity, same run",
            # Each part exclusive of the parts it calls: they and `unaccounted` add up to `total`.
            "breakdown_ms_per_step": parts,
            "history": instrumented.history,
            "baseline_inner_ms_per_step": {k: round(v, 3) for k, v in (base.inner or {}).items()},
            "meets_goal": None,
            "figure": _breakdown_text(breakdown, instrumented, base),
            "versus": "instrumented extra run; ms per step, each part without the parts it calls",
            "goal": "-",
        },
    ]
