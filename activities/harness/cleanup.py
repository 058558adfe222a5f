"""Removing a finished attempt's workspace, on one side thread, off the step's path.

Receipts and events keep what matters; the workspace goes once its attempt has ended (its
sandbox is dead by then: nothing writes to it again). Removing a directory tree costs a few
metadata operations each, which a no-op step's activity should not wait for; the thread takes
them in order, and whatever is queued when the process exits normally is removed first.
"""

import atexit
import queue
import shutil
import threading
from contextlib import suppress
from pathlib import Path

from activities.store.skill_packages import remove_tree


def remove_attempt(workspace: Path, skills_staging: Path) -> None:
    """Remove one attempt's workspace and staged skills, then its step and run dirs if empty."""
    shutil.rmtree(workspace, ignore_errors=True)
    # Staged skills are sealed read-only, so rmtree alone would leave them.
    with suppress(OSError):
        remove_tree(skills_staging)
    for parent in (workspace.parent, workspace.parent.parent):  # step, then run dir
        with suppress(OSError):
            parent.rmdir()  # only when empty: a sibling attempt may still run


class Remover:
    """One daemon thread removing the workspaces handed to it; `drain` waits for the queue."""

    def __init__(self) -> None:
        self._queue: queue.Queue[tuple[Path, Path]] = queue.Queue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def remove(self, workspace: Path, skills_staging: Path) -> None:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._run, name="forge-workspace-removal", daemon=True
                )
                self._thread.start()
        self._queue.put((workspace, skills_staging))

    def drain(self) -> None:
        """Wait until every queued workspace is removed."""
        if self._thread is not None:
            self._queue.join()

    def _run(self) -> None:
        while True:
            workspace, staging = self._queue.get()
            try:
                remove_attempt(workspace, staging)
            finally:
                self._queue.task_done()


REMOVER = Remover()
atexit.register(REMOVER.drain)
