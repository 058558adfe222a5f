"""HTTP connections pinned to addresses already checked, under one deadline for the whole request.

http.client is used directly (not urllib, not urllib3): it reads no proxy variables, follows no
redirects, and its connect() is the one place to replace. Host stays the original name, so the
Host header, TLS SNI and certificate verification all use it; only the TCP connect goes to the
checked IP, and nothing resolves the name a second time.
"""

from __future__ import annotations

import http.client
import socket
import ssl
import threading
import time
from collections.abc import Sequence
from typing import Any

from compiler.addresses import IpAddress

__all__ = ["Deadline", "PinnedHTTPConnection", "PinnedHTTPSConnection"]


class Deadline:
    """The time one request may take, from connect to the last byte read.

    Socket timeouts bound each blocking call, not their sum: a server that trickles one byte a
    second never trips them. So once a socket is connected a timer shuts it down when the
    deadline passes, which wakes whatever call is blocked on it; `fired` then says why it woke.
    """

    def __init__(self, seconds: float) -> None:
        self._at = time.monotonic() + seconds
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._timer: threading.Timer | None = None
        self._done = False
        self.fired = False

    def remaining(self) -> float:
        """Seconds left; TimeoutError when none are."""
        left = self._at - time.monotonic()
        if left <= 0:
            raise TimeoutError("the request's deadline passed")
        return left

    def watch(self, sock: socket.socket) -> None:
        """Shut `sock` down at the deadline (the socket that replaces it is watched instead)."""
        with self._lock:
            self._sock = sock
            if self._timer is None and not self._done:
                self._timer = threading.Timer(max(self._at - time.monotonic(), 0), self._expire)
                self._timer.daemon = True
                self._timer.start()

    def finish(self) -> None:
        """Stop watching: after this returns the timer touches no socket (close them now)."""
        with self._lock:
            self._done = True
            timer = self._timer
        if timer is not None:
            timer.cancel()

    def _expire(self) -> None:
        # Under the lock, so finish() cannot return (and the socket be closed) while this runs.
        with self._lock:
            if self._done or self._sock is None:
                return
            self.fired = True
            try:
                # The base class's shutdown: SSLSocket.shutdown would also drop its SSL object
                # under the reader's feet; this only makes the blocked recv() return.
                socket.socket.shutdown(self._sock, socket.SHUT_RDWR)
            except OSError:
                pass  # already closed or never connected: nothing is blocked on it


def open_socket(addresses: Sequence[IpAddress], port: int, deadline: Deadline) -> socket.socket:
    """A TCP connection to the first of `addresses` that answers, within the deadline."""
    errors: list[str] = []
    for ip in addresses:
        family = socket.AF_INET if ip.version == 4 else socket.AF_INET6
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            sock.settimeout(deadline.remaining())
            sock.connect((str(ip), port))
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        except OSError as err:
            sock.close()
            if isinstance(err, TimeoutError):
                raise  # the deadline is spent: no time is left for the next address
            errors.append(f"{ip} port {port}: {err.strerror or err}")
            continue
        except BaseException:
            sock.close()
            raise
        deadline.watch(sock)
        return sock
    raise ConnectionError(f"could not connect to {'; '.join(errors)}")


class PinnedHTTPConnection(http.client.HTTPConnection):
    """HTTP to `host` (the Host header) over a connection to one of the checked `addresses`."""

    def __init__(
        self, host: str, port: int, *, addresses: Sequence[IpAddress], deadline: Deadline
    ) -> None:
        super().__init__(host, port, timeout=deadline.remaining())
        self._addresses = tuple(addresses)
        self._deadline = deadline

    def connect(self) -> None:
        self.sock = open_socket(self._addresses, self.port, self._deadline)


class PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to `host` (Host header, SNI, certificate name) over a connection to a checked IP."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        addresses: Sequence[IpAddress],
        deadline: Deadline,
        tls: ssl.SSLContext,
    ) -> None:
        super().__init__(host, port, timeout=deadline.remaining(), context=tls)
        self._addresses = tuple(addresses)
        self._deadline = deadline
        self._tls = tls

    def connect(self) -> None:
        raw = open_socket(self._addresses, self.port, self._deadline)
        try:
            # The handshake runs after the wrapped socket is watched, so it is under the deadline.
            sock: Any = self._tls.wrap_socket(
                raw, server_hostname=self.host, do_handshake_on_connect=False
            )
        except (OSError, ValueError):
            raw.close()
            raise
        self.sock = sock
        self._deadline.watch(sock)
        sock.do_handshake()
