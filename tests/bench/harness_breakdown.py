"""Where step__execute's time goes: every part of it timed, exclusive of the parts it calls.

The harness bench runs extra, instrumented runs with these parts patched; their times add up to
the activity's time in its thread (`total`), with the outer functions' own lines `unaccounted`.
"""

import functools
import inspect
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from typing import Any
from unittest import mock

from activities.harness import checks, executors, lifecycle, program
from activities.harness import run_attempt as attempt_steps
from activities.harness.attempt import StepAttempt
from activities.harness.heartbeats import Heartbeats
from activities.harness.ledger import AttemptLog
from activities.steps import activity as step_activity
from activities.steps.activity import StepActivities
from activities.steps.plans import CompiledPlans

# (where it is looked up, its name, its label): module functions are patched where they are
# called. The outer functions' own time (the lines between their parts) is unaccounted.
OUTER = (
    (StepActivities, "execute", "StepActivities.execute"),
    (step_activity, "execute_attempt", "execute_attempt"),
    (lifecycle, "run_attempt", "run_attempt"),
)
PARTS: tuple[tuple[object, str, str], ...] = (
    # step__execute around the attempt
    (CompiledPlans, "get", "CompiledPlans.get"),
    (lifecycle, "completed_before", "completed_before"),
    (StepAttempt, "begin", "StepAttempt.begin"),
    (AttemptLog, "__init__", "AttemptLog.__init__"),
    (lifecycle, "started", "started"),
    (AttemptLog, "close", "AttemptLog.close"),
    (lifecycle, "clean_up", "clean_up"),
    # before the program: workspace, inputs, preflight
    (attempt_steps, "_prepare", "_prepare"),
    (attempt_steps, "prepare_workspace", "prepare_workspace"),
    (attempt_steps, "write_iteration", "write_iteration"),
    (attempt_steps, "write_params", "write_params"),
    (attempt_steps, "materialize_inputs", "materialize_inputs"),
    (checks, "preflight", "preflight"),
    (checks, "verify_inputs", "verify_inputs"),
    (attempt_steps, "_receipt", "_receipt"),
    (attempt_steps, "_store_receipt", "_store_receipt"),
    (StepAttempt, "draft", "StepAttempt.draft"),
    (AttemptLog, "flush_later", "AttemptLog.flush_later"),
    (AttemptLog, "flush", "AttemptLog.flush"),
    # the program, with the tool bridge served to it
    (attempt_steps, "run_executor", "executors.run_executor"),
    (executors, "_skill_dirs", "_skill_dirs"),
    (executors, "_execute", "_execute"),
    (program, "executor_for", "executor_for"),
    (program, "run_program", "run_program"),
    (program, "launch", "launch"),
    (program, "run_sandboxed", "run_sandboxed"),
    (program, "program_failure", "program_failure"),
    # after the program: ledger, checks, postflight, outputs, the completing transaction
    (AttemptLog, "stream", "AttemptLog.stream"),
    (attempt_steps, "check_evaluations", "check_evaluations"),
    (attempt_steps, "_within_budget", "_within_budget"),
    (attempt_steps, "read_note", "read_note"),
    (attempt_steps, "params_read", "params_read"),
    (checks, "check_undeclared_writes", "check_undeclared_writes"),
    (checks, "postflight", "postflight"),
    (checks, "verify_outputs", "verify_outputs"),
    (checks, "verify_skill_output", "verify_skill_output"),
    (attempt_steps, "persist_outputs", "persist_outputs"),
    (attempt_steps, "_store_code", "_store_code"),
    (attempt_steps, "receipt_summary", "receipt_summary"),
    (attempt_steps, "_publications", "_publications"),
    (AttemptLog, "flush_published", "AttemptLog.flush_published"),
)
# Context managers: their entry and exit are timed, not the block they hold.
SCOPES: tuple[tuple[object, str, str], ...] = (
    (Heartbeats, "beating", "Heartbeats.beating"),
    (executors, "bridge_session", "bridge_session"),
)
_OUTER_LABELS = frozenset(label for _, _, label in OUTER)
UNACCOUNTED = "unaccounted"
# Where the summary line groups the parts (a part in no group is counted under "other").
GROUPS: dict[str, tuple[str, ...]] = {
    "sandbox": ("run_sandboxed",),
    "bridge": ("bridge_session", "_skill_dirs"),
    "events": (
        "AttemptLog.__init__",
        "AttemptLog.flush_later",
        "AttemptLog.flush",
        "AttemptLog.stream",
        "AttemptLog.flush_published",
        "AttemptLog.close",
        "StepAttempt.draft",
        "started",
        "_publications",
    ),
    "receipts": ("preflight", "postflight", "_receipt", "_store_receipt", "receipt_summary"),
    "workspace+outputs": (
        "prepare_workspace",
        "write_iteration",
        "write_params",
        "materialize_inputs",
        "read_note",
        "params_read",
        "check_undeclared_writes",
        "persist_outputs",
        "clean_up",
    ),
}


class Clock:
    """Exclusive wall time per label: a part's time less the time of the parts it calls."""

    def __init__(self) -> None:
        self.own: dict[str, float] = defaultdict(float)  # ms, summed over the calls
        self._local = threading.local()

    def call(self, label: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        stack: list[list[float]] = self._local.__dict__.setdefault("stack", [])
        if not stack and label not in _OUTER_LABELS:
            return fn(*args, **kwargs)  # called outside step__execute (another thread): not ours
        frame = [0.0]  # time spent in the parts this call makes
        stack.append(frame)
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            elapsed = time.perf_counter() - start
            stack.pop()
            self.own[label] += (elapsed - frame[0]) * 1000
            if stack:
                stack[-1][0] += elapsed

    def timed(self, fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            return self.call(label, fn, *args, **kwargs)

        return wrapper

    def scoped(self, fn: Callable[..., Any], label: str) -> Callable[..., Any]:
        """A context manager's function whose entry and exit are timed, not its block."""
        clock = self

        class _Timed:
            def __init__(self, cm: Any) -> None:
                self._cm = cm

            def __enter__(self) -> Any:
                return clock.call(label, self._cm.__enter__)

            def __exit__(self, *exc: Any) -> Any:
                return clock.call(label, self._cm.__exit__, *exc)

        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> _Timed:
            return _Timed(fn(*args, **kwargs))

        return wrapper


@contextmanager
def instrumented(clock: Clock) -> Iterator[None]:
    """Time every part of step__execute (see PARTS), each exclusive of the parts it calls."""
    with ExitStack() as stack:
        for owner, name, label in (*OUTER, *PARTS):
            fn = inspect.getattr_static(owner, name)
            if isinstance(fn, classmethod):
                wrapped: Any = classmethod(clock.timed(fn.__func__, label))
            else:
                wrapped = clock.timed(fn, label)
            stack.enter_context(mock.patch.object(owner, name, wrapped))
        for owner, name, label in SCOPES:
            fn = getattr(owner, name)
            stack.enter_context(mock.patch.object(owner, name, clock.scoped(fn, label)))
        yield


def breakdown(own: dict[str, float], steps: int) -> dict[str, float]:
    """ms per step for each part, the outer functions' own time as unaccounted, and the total.

    The parts and unaccounted add up to the total (StepActivities.execute, in its thread).
    """
    per_step = {label: ms / steps for label, ms in own.items()}
    parts = {k: v for k, v in per_step.items() if k not in _OUTER_LABELS}
    unaccounted = sum(per_step.get(k, 0.0) for k in _OUTER_LABELS)
    return {
        **dict(sorted(parts.items(), key=lambda kv: -kv[1])),
        UNACCOUNTED: unaccounted,
        "total": sum(parts.values()) + unaccounted,
    }
