"""One side thread that heartbeats every step attempt in flight on this worker.

A thread per attempt cost its start and join on every step (a few ms of a no-op step); one
thread with a registry costs a dict entry. An attempt is heartbeaten only while it is
registered: leaving `beating()` waits for a heartbeat in progress, so none follows the attempt.
"""

import contextvars
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from temporalio import activity


class Heartbeats:
    """Heartbeats each registered activity context every `every_s` seconds."""

    def __init__(self, every_s: float) -> None:
        self._every_s = every_s
        self._lock = threading.Lock()  # held while registering, leaving and beating
        self._due: dict[object, tuple[contextvars.Context, float]] = {}
        self._thread: threading.Thread | None = None

    @contextmanager
    def beating(self) -> Iterator[None]:
        """Heartbeat the calling activity for as long as the block runs."""
        token = object()
        with self._lock:
            self._due[token] = (contextvars.copy_context(), time.monotonic() + self._every_s)
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="forge-heartbeats", daemon=True
                )
                self._thread.start()
        try:
            yield
        finally:
            with self._lock:
                del self._due[token]

    def _run(self) -> None:
        while True:
            time.sleep(min(self._every_s, 0.5))
            now = time.monotonic()
            with self._lock:
                due = [t for t, (_, at) in self._due.items() if at <= now]
            for token in due:
                with self._lock:  # the attempt may have left meanwhile: then no beat
                    entry = self._due.get(token)
                    if entry is None:
                        continue
                    context, _ = entry
                    self._due[token] = (context, now + self._every_s)
                    # Whatever a heartbeat raises belongs to the activity (it learns of its
                    # cancellation on its own); this thread serves every other attempt too.
                    with suppress(Exception):
                        context.run(activity.heartbeat)
