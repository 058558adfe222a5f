"""One side thread that accepts the connections of every tool bridge served on this worker.

A thread per attempt's bridge cost its start and its join on every step, whether or not the
step's code ever called the bridge (on a busy machine about as long as the rest of the bridge's
set-up together); one thread polling every bridge's listening socket costs a registration. A
bridge is served only while it is registered: `unregister` waits for a hand-over in progress, so
no connection reaches a bridge after it returned.
"""

import logging
import select
import socket
import threading
from collections.abc import Callable

# Called when a listener has connections waiting; False: stop polling it (the listener failed).
OnReady = Callable[[], bool]
_log = logging.getLogger(__name__)


class Acceptor:
    """Polls the registered listening sockets and calls each one's `on_ready` when it is."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # held while registering, unregistering and handing over
        self._ready: dict[int, OnReady] = {}
        self._poll: select.epoll | None = None

    def register(self, listener: socket.socket, on_ready: OnReady) -> None:
        """Call `on_ready` (on the acceptor's thread) whenever `listener` has a connection waiting.

        `listener` must be non-blocking: `on_ready` accepts until none is left.
        """
        with self._lock:
            if self._poll is None:
                self._poll = select.epoll()
                threading.Thread(target=self._run, name="forge-bridge-accept", daemon=True).start()
            fd = listener.fileno()
            self._ready[fd] = on_ready
            self._poll.register(fd, select.EPOLLIN)

    def unregister(self, listener: socket.socket) -> None:
        """Stop polling `listener`; a hand-over to it in progress has finished on return."""
        with self._lock:
            self._drop(listener.fileno())

    def _drop(self, fd: int) -> None:
        if self._ready.pop(fd, None) is not None and self._poll is not None:
            self._poll.unregister(fd)

    def _run(self) -> None:
        assert self._poll is not None
        while True:
            for fd, _ in self._poll.poll():
                with self._lock:
                    # Unregistered since the poll returned (and the number perhaps reused by a
                    # new listener, whose on_ready then finds nothing to accept): skipped.
                    on_ready = self._ready.get(fd)
                    if on_ready is not None and not self._hand_over(on_ready):
                        self._drop(fd)

    @staticmethod
    def _hand_over(on_ready: OnReady) -> bool:
        """`on_ready()`; a fault in it ends that one bridge's accepting, never this thread's."""
        try:
            return on_ready()
        except Exception:  # e.g. no thread could be started to serve a connection
            _log.exception("a tool bridge stopped accepting connections")
            return False


ACCEPTOR = Acceptor()
