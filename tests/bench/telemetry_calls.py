"""Forge's telemetry calls on a run's path, each timed where it is called (bench_telemetry).

With telemetry off a call costs microseconds on a step of tens of milliseconds: far below what
an end-to-end time can resolve on a shared machine. So bench_telemetry also runs the engine once
with every call of its `_COMPILED_OUT` table wrapped in a timer, the real (off) helpers, and
once more with the bare ones wrapped the same way: the difference per step is what the off
calls cost, the timers' own cost cancelling out. A context manager's time is its creation,
entry and exit, never the block it wraps.
"""

from __future__ import annotations

import contextlib
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterator
from time import perf_counter_ns
from types import TracebackType
from typing import Any
from unittest import mock

__all__ = ["CONTEXT_MANAGERS", "per_step_ns", "timed_calls"]

# The helpers of bench_telemetry._COMPILED_OUT that are context managers.
CONTEXT_MANAGERS = frozenset({"step_ids", "sandbox_span", "tool_span", "model_span", "run_span"})

Times = dict[str, list[int]]


class _TimedContext:
    def __init__(self, inner: Any, name: str, times: Times, created_ns: int) -> None:
        self._inner, self._name, self._times, self._ns = inner, name, times, created_ns

    def __enter__(self) -> Any:
        start = perf_counter_ns()
        try:
            return self._inner.__enter__()
        finally:
            self._ns += perf_counter_ns() - start

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        start = perf_counter_ns()
        try:
            return self._inner.__exit__(kind, exc, tb)  # type: ignore[no-any-return]
        finally:
            self._times[self._name].append(self._ns + perf_counter_ns() - start)


def _timed(name: str, fn: Callable[..., Any], times: Times) -> Callable[..., Any]:
    if name in CONTEXT_MANAGERS:

        def context(*args: Any, **kwargs: Any) -> _TimedContext:
            start = perf_counter_ns()
            inner = fn(*args, **kwargs)
            return _TimedContext(inner, name, times, perf_counter_ns() - start)

        return context

    def call(*args: Any, **kwargs: Any) -> Any:
        start = perf_counter_ns()
        try:
            return fn(*args, **kwargs)
        finally:
            times[name].append(perf_counter_ns() - start)

    return call


@contextlib.contextmanager
def timed_calls(calls: tuple[tuple[object, str, Callable[..., Any]], ...]) -> Iterator[Times]:
    """Within: each `owner.name` is `fn` wrapped in a timer; yields each name's call times."""
    times: Times = defaultdict(list)
    with contextlib.ExitStack() as stack:
        for owner, name, fn in calls:
            stack.enter_context(mock.patch.object(owner, name, _timed(name, fn, times)))
        yield times


def per_step_ns(times: Times, steps: int) -> dict[str, float]:
    """Per helper: calls per step times its median call, in ns per step (robust to a preempted
    call); and their sum under "total"."""
    found = {name: len(ns) / steps * statistics.median(ns) for name, ns in times.items() if ns}
    found["total"] = sum(found.values())
    return found
