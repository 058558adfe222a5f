"""What lets a cancelled run stop an activity of its front end (issue 35).

Temporal tells an activity it is cancelled only in the answer to a heartbeat, and the SDK then
raises CancelledError in the activity's thread, between two Python instructions. So:

- `heartbeating` beats for a front-end activity (recipes__match, compile__plan, compile__passes)
  from one side thread while it works: its pure work (bounded by schemas/bounds.py) is then
  interrupted where it stands.
- `interruptible` waits on blocking I/O (a model call) in short slices: a thread blocked in a
  socket read sees no exception until the read returns, so the call runs in a helper thread and
  the activity's own thread waits where the cancellation can reach it. The abandoned call ends
  by its own timeout; nothing of its answer is recorded.
"""

import concurrent.futures
import contextvars
import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

from temporalio import activity

from activities.harness.heartbeats import Heartbeats

__all__ = ["FRONT_END_BEAT_S", "heartbeating", "interruptible"]

P = ParamSpec("P")
R = TypeVar("R")
# Well inside the front end's heartbeat timeout (workflows/policies.FRONT_END_HEARTBEAT_TIMEOUT).
FRONT_END_BEAT_S = 1.0
_BEATS = Heartbeats(FRONT_END_BEAT_S)
_SLICE_S = 0.2  # how long a cancelled activity may still wait on a call it abandons
_CALLS = concurrent.futures.ThreadPoolExecutor(max_workers=64, thread_name_prefix="forge-io")


def heartbeating(fn: Callable[P, R]) -> Callable[P, R]:
    """Heartbeat the activity `fn` runs as, every FRONT_END_BEAT_S, until it returns."""

    @functools.wraps(fn)
    def beating(*args: P.args, **kwargs: P.kwargs) -> R:
        with _BEATS.beating():
            return fn(*args, **kwargs)

    return beating


def interruptible(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """`fn(*args, **kwargs)`; in an activity, waited on so that its cancellation interrupts it."""
    if not activity.in_activity():
        return fn(*args, **kwargs)
    context = contextvars.copy_context()
    future = _CALLS.submit(context.run, functools.partial(fn, *args, **kwargs))
    while True:
        try:
            return future.result(timeout=_SLICE_S)
        except concurrent.futures.TimeoutError:
            continue
