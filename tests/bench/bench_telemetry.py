"""What telemetry costs a step: the engine benchmark with telemetry compiled out, off, and on.

The engine benchmark of bench_harness (STEPS no-op code steps, one at a time, through a
ForgeWorker on a Temporal dev server, each in its bubblewrap sandbox), run three ways in the same
process, interleaved round by round (the order rotating), ROUNDS times each after one unmeasured
round; each figure is the median ms per step of its way, as a ratio to the baseline's median:

- **compiled out** (the baseline): Forge's span and metric helpers replaced, where their callers
  bound them, by bare functions that do nothing and touch no OpenTelemetry object
  (`_COMPILED_OUT`): the engine as if the telemetry calls had never been written. The Temporal
  SDK's tracing interceptor is absent too (it is only ever added with telemetry on).
- **off**: the engine as shipped with FORGE_TELEMETRY=off and FORGE_METRICS_PORT unset: no
  provider installed, every helper called and returning at once (the API's no-op span, the
  metrics' `enabled` check). Goal: ≤ 1% per step over the baseline.
- **on**: FORGE_TELEMETRY=otlp to a real OTLP/HTTP receiver (tests/telemetry/otlp_receiver.py)
  in a process of its own, as a Collector would be: the SDK's tracer provider with the batch
  span processor and the Temporal SDK's interceptor, the MeterProvider with the periodic OTLP
  metric reader (every METRIC_INTERVAL_MS, shorter than the 60 s default: more exports, not
  fewer), Temporal's runtime metrics bridged in. Goal: ≤ 5% per step over the baseline. The
  receiver's counts are read after the on rounds: a side that exported nothing fails the run.

Each way starts its own worker (and, on, its own client on a runtime carrying the metric
buffer), runs WARM_STEPS unmeasured, then STEPS measured; the time is the run's, from start to
result. Run with `make bench BENCH=telemetry REPEAT=3` (or `python -m tests.bench telemetry`).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import statistics
import subprocess
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any
from unittest import mock

from opentelemetry import trace
from opentelemetry.metrics import _internal as metrics_api
from opentelemetry.util._once import Once
from temporalio.runtime import Runtime

from activities import telemetry_metrics
from activities.harness import run_attempt
from activities.models import gateway
from activities.sandbox import bridge, runner
from tests.bench.bench_harness import _run_harness, harness_plan, serial_profile
from tests.temporal_env import temporal_test_env
from tests.workflows.engine import engine
from workers.settings import Settings
from workers.telemetry import tracing
from workers.telemetry.metrics import build_metrics

STEPS = 30
WARM_STEPS = 5
# A multiple of len(WAYS): each way runs first, second and third equally often. One more round
# runs first, unmeasured: a process's first runs are slower whichever way they take.
ROUNDS = 9
SETTLE_S = 1.0  # the pause before each way's worker starts (another one has just stopped)
METRIC_INTERVAL_MS = 1000
GOAL_OFF = 1.01
GOAL_ON = 1.05
BASE = "compiled_out"
WAYS = (BASE, "off", "on")


def _nothing(*_args: Any, **_kwargs: Any) -> None:
    return None


@contextlib.contextmanager
def _no_span(*_args: Any, **_kwargs: Any) -> Iterator[Any]:
    yield trace.INVALID_SPAN  # a plain object: the callers' note_* are compiled out too


@contextlib.contextmanager
def _no_context(*_args: Any, **_kwargs: Any) -> Iterator[None]:
    yield None


# Every Forge telemetry call on a run's path, where its caller looks it up.
_COMPILED_OUT: tuple[tuple[object, str, Any], ...] = (
    (run_attempt, "step_ids", _no_context),
    (runner, "sandbox_span", _no_span),
    (runner, "note_sandbox", _nothing),
    (bridge, "tool_span", _no_span),
    (bridge, "tool_outcome", _nothing),
    (gateway, "model_span", _no_span),
    (gateway, "note_model_response", _nothing),
    (gateway, "note_failure", _nothing),
    (tracing, "run_span", _no_context),
    *(
        (telemetry_metrics, name, _nothing)
        for name in (
            "step_attempt",
            "sandbox_started",
            "model_called",
            "gate_decided",
            "quota_refused",
            "webhook_attempt",
            "guard_findings",
        )
    ),
)


@contextlib.contextmanager
def _compiled_out() -> Iterator[None]:
    with contextlib.ExitStack() as stack:
        for owner, name, bare in _COMPILED_OUT:
            assert callable(getattr(owner, name)), f"{owner}.{name} is no longer there"
            stack.enter_context(mock.patch.object(owner, name, bare))
        yield


def _forget_providers() -> None:
    """Back to FORGE_TELEMETRY=off: no provider (the API lets a process set one once)."""
    tracing._provider = None
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
    metrics_api._METER_PROVIDER = None
    metrics_api._METER_PROVIDER_SET_ONCE = Once()
    telemetry_metrics._enabled = False


@contextlib.asynccontextmanager
async def _on(settings: Settings) -> AsyncIterator[None]:
    """Telemetry on as `forge worker` turns it on (workers/cli/run.py, observe.py)."""
    plain = Runtime.default()
    tracer_provider = tracing.install(settings, "worker")
    process = build_metrics("forge-worker", settings=settings)
    process.install()  # the default runtime now carries the metric buffer
    try:
        async with process.temporal_bridge():
            yield
    finally:
        process.close()  # flushes the last metrics
        if tracer_provider is not None:
            tracer_provider.shutdown()  # flushes the batched spans
        _forget_providers()
        Runtime.set_default(plain, error_if_already_set=False)


@contextlib.contextmanager
def _receiver() -> Iterator[tuple[str, subprocess.Popen[str]]]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "tests.telemetry.otlp_receiver"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    try:
        yield proc.stdout.readline().strip(), proc
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)


def _received(proc: subprocess.Popen[str]) -> dict[str, int]:
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write("\n")
    proc.stdin.flush()
    counts: dict[str, int] = json.loads(proc.stdout.readline())
    return counts


async def _measure(home: Path) -> tuple[dict[str, list[float]], dict[str, int]]:
    document, warm, profile = harness_plan(STEPS), harness_plan(WARM_STEPS), serial_profile()
    per_step: dict[str, list[float]] = {way: [] for way in WAYS}
    with _receiver() as (url, receiver):
        async with temporal_test_env() as env:
            for r in range(-1, ROUNDS):
                for way in WAYS[r % 3 :] + WAYS[: r % 3]:
                    await asyncio.sleep(SETTLE_S)
                    queue = f"bench-telemetry-{uuid.uuid4()}"
                    settings = Settings(home=home, task_queue=queue)
                    async with contextlib.AsyncExitStack() as stack:
                        if way == BASE:
                            stack.enter_context(_compiled_out())
                        elif way == "on":
                            settings = settings.model_copy(
                                update={
                                    "telemetry": "otlp",
                                    "otel_endpoint": url,
                                    "otel_metric_export_interval": METRIC_INTERVAL_MS,
                                }
                            )
                            await stack.enter_async_context(_on(settings))
                        eng = await stack.enter_async_context(
                            engine(env, home, queue, settings=settings)
                        )
                        await _run_harness(eng, warm, profile)
                        timing = await _run_harness(eng, document, profile)
                    if r >= 0:
                        per_step[way].append(timing.total_ms / STEPS)
        counts = _received(receiver)
    if not counts["spans"] or not counts["points"]:
        raise RuntimeError(f"telemetry on exported nothing to the receiver: {counts}")
    return per_step, counts


def _row(
    name: str, way: str, per_step: dict[str, list[float]], goal: float, note: str
) -> dict[str, Any]:
    ours, base = statistics.median(per_step[way]), statistics.median(per_step[BASE])
    ratio = ours / base
    return {
        "name": name,
        "steps": STEPS,
        "rounds": ROUNDS,
        "ms_per_step": round(ours, 2),
        "baseline": "the same engine with Forge's telemetry calls compiled out, same run",
        "baseline_ms_per_step": round(base, 2),
        "rounds_ms_per_step": {
            w: [round(x, 2) for x in per_step[w]] for w in (way, "compiled_out")
        },
        "ratio_to_baseline": round(ratio, 4),
        "goal_ratio": goal,
        "meets_goal": ratio <= goal,
        "figure": f"{ours:.1f} ms/step {note}",
        "versus": f"{(ratio - 1) * 100:+.1f}% vs compiled out ({base:.1f} ms/step)",
        "goal": f"≤ {(goal - 1) * 100:.0f}% per step",
    }


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-telemetry-") as tmp:
        per_step, counts = asyncio.run(_measure(Path(tmp) / "forge"))
    on = _row("telemetry.on_per_step", "on", per_step, GOAL_ON, "telemetry on (OTLP/HTTP)")
    on["received"] = counts
    return [_row("telemetry.off_per_step", "off", per_step, GOAL_OFF, "telemetry off"), on]


if __name__ == "__main__":
    from tests.bench.report import run_alone

    raise SystemExit(run_alone(run()))
