"""forge_bridge: the one way out of the sandbox for step code, through the governed tool bridge.

    import forge_bridge

    forge_bridge.call("log.note", {"text": "read 120 rows"})
    page = forge_bridge.call("http.request", {"method": "GET", "url": "https://example.com/"})

Every call is checked by the platform (the step's allowed tools, its budgets, the egress
allowlist) and recorded as an event. A refused or failed call raises BridgeError, whose
failure_class says why (TOOL_NOT_ALLOWED, BUDGET_EXHAUSTED, EGRESS_BLOCKED, ...). Calls are
idempotent: the same tool and arguments (and `key`) in a retried attempt return the first
attempt's result without running the tool again; pass a distinct `key` to make a call anew.

The run's scalar parameters (dates, thresholds, names the user may change between runs) are
read with `param`, never hard-coded:

    cutoff = forge_bridge.param("cutoff")            # typed: str, int, float or bool
    limit = forge_bridge.param("limit", default=10)  # the default only if the run has none

They come from /workspace/meta/params.json, written by the platform before the step runs with
each value already of its declared type ($FORGE_PARAMS_FILE overrides the path; else it is
next to $FORGE_BRIDGE_SOCKET). Each read is recorded in meta/params-read, so the platform
knows which step read which parameter. A name the run does not have, without a default,
raises ParameterError (a BridgeError and a KeyError).

Standard library only, Python 3.11: this file runs inside the sandbox, not in the platform.
"""

from __future__ import annotations

import json
import os
import socket
import threading
import time
from typing import Any

__all__ = [
    "DEFAULT_SOCKET",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "PARAMS_ENV",
    "PARAMS_FILE",
    "PARAMS_READ_FILE",
    "SOCKET_ENV",
    "BridgeError",
    "Client",
    "ParameterError",
    "call",
    "param",
]

DEFAULT_SOCKET = "/workspace/meta/bridge.sock"
SOCKET_ENV = "FORGE_BRIDGE_SOCKET"
MAX_REQUEST_BYTES = 1 << 20  # one request line, newline included
MAX_RESPONSE_BYTES = 8 << 20  # one response line, newline included
PARAMS_FILE = "/workspace/meta/params.json"
PARAMS_ENV = "FORGE_PARAMS_FILE"
PARAMS_READ_FILE = "params-read"  # next to the parameters file: one name per line, per read
_SUN_PATH_MAX = 107  # sockaddr_un.sun_path is 108 bytes with its NUL


class BridgeError(Exception):
    """A bridge call that returned no result: refused, failed, or the bridge is unreachable."""

    def __init__(self, failure_class: str, message: str) -> None:
        super().__init__(f"{failure_class}: {message}")
        self.failure_class = failure_class
        self.message = message


class ParameterError(BridgeError, KeyError):
    """A parameter the run does not have (and no default was given), or an unreadable file."""

    def __str__(self) -> str:  # KeyError would quote the message
        return f"{self.failure_class}: {self.message}"


class Client:
    """One connection to the bridge, opened on first use and reused; safe to share by threads.

    Calls from several threads are sent one after another on the one connection.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self._path = os.fspath(path) if path is not None else None
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._pid = os.getpid()
        self._next_id = 0
        self._buffer = bytearray()

    @property
    def path(self) -> str:
        """The socket this client talks to: the constructor's, else $FORGE_BRIDGE_SOCKET."""
        if self._path is None:
            self._path = os.environ.get(SOCKET_ENV) or DEFAULT_SOCKET
        return self._path

    def call(
        self,
        tool: str,
        args: dict[str, Any] | None = None,
        *,
        key: str | None = None,
        timeout: float = 300,
    ) -> Any:
        """Call `tool` with `args` through the bridge and return its result.

        Raises:
            BridgeError: the call was refused or failed, the request is not JSON or too large,
                the bridge did not answer within `timeout` seconds, or it cannot be reached.
        """
        request_id = self._new_id()
        line = _request_line(request_id, tool, args, key, timeout)
        with self._lock:
            reply = self._round_trip(line, time.monotonic() + timeout)
        # Replies come in request order; an error the bridge could not tie to a request id
        # (id null) still answers this one.
        if reply.get("id") != request_id and not (reply.get("id") is None and not reply.get("ok")):
            self.close()
            raise BridgeError(
                "BRIDGE_PROTOCOL",
                f"the bridge answered request {reply.get('id')!r} to request {request_id}; "
                "the connection was reset, call again",
            )
        if reply.get("ok") is True:
            return reply.get("result")
        error = reply.get("error")
        if not isinstance(error, dict):
            raise BridgeError(
                "BRIDGE_PROTOCOL", f"the bridge sent a malformed reply: {reply!r:.200}"
            )
        raise BridgeError(str(error.get("class", "BRIDGE_ERROR")), str(error.get("message", "")))

    def close(self) -> None:
        """Close the connection; the next call opens a new one."""
        sock, self._sock = self._sock, None
        self._buffer.clear()
        if sock is not None:
            sock.close()

    def _new_id(self) -> int:
        with self._lock:
            self._next_id += 1
            return self._next_id

    def _round_trip(self, line: bytes, deadline: float) -> dict[str, Any]:
        try:
            sock = self._connected(deadline)
            sock.settimeout(_left(deadline))
            sock.sendall(line)
            raw = self._read_line(sock, deadline)
        except TimeoutError:
            self.close()  # a late answer would be read as the next call's
            raise BridgeError(
                "BRIDGE_TIMEOUT", "the bridge did not answer in time; raise `timeout` or retry"
            ) from None
        except OSError as exc:
            self.close()
            raise BridgeError(
                "BRIDGE_UNAVAILABLE",
                f"cannot talk to the tool bridge at {self.path}: {exc.strerror or exc}. The step "
                "runs without a bridge (its contract allows no tools), or the bridge has shut down",
            ) from None
        try:
            reply = json.loads(raw)
        except ValueError as exc:
            self.close()
            raise BridgeError("BRIDGE_PROTOCOL", f"the bridge sent invalid JSON: {exc}") from None
        if not isinstance(reply, dict):
            self.close()
            raise BridgeError("BRIDGE_PROTOCOL", "the bridge sent a reply that is not an object")
        return reply

    def _connected(self, deadline: float) -> socket.socket:
        if self._sock is not None and self._pid == os.getpid():
            return self._sock
        # A forked child must not share its parent's connection (replies would interleave).
        self._sock, self._pid = None, os.getpid()
        self._buffer.clear()
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.settimeout(_left(deadline))
            _connect(sock, self.path)
        except BaseException:
            sock.close()
            raise
        self._sock = sock
        return sock

    def _read_line(self, sock: socket.socket, deadline: float) -> bytes:
        start = 0
        while True:
            end = self._buffer.find(b"\n", start)
            if end >= 0:
                raw = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                return raw
            if len(self._buffer) >= MAX_RESPONSE_BYTES:
                self.close()
                raise BridgeError(
                    "BRIDGE_PROTOCOL",
                    f"the bridge's reply is larger than {MAX_RESPONSE_BYTES} bytes; ask for less",
                )
            start = len(self._buffer)
            sock.settimeout(_left(deadline))
            chunk = sock.recv(1 << 16)
            if not chunk:
                raise ConnectionResetError(0, "the bridge closed the connection")
            self._buffer += chunk


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError
    return left


def _connect(sock: socket.socket, path: str) -> None:
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        sock.connect(path)
        return
    # Too long for sockaddr_un: reach the socket through an fd of its directory.
    parent, name = os.path.split(path)
    fd = os.open(parent or ".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        sock.connect(f"/proc/self/fd/{fd}/{name}")
    finally:
        os.close(fd)


def _request_line(
    request_id: int, tool: str, args: dict[str, Any] | None, key: str | None, timeout: float
) -> bytes:
    if not isinstance(tool, str) or not tool:
        raise BridgeError("BAD_REQUEST", f"tool must be a tool id such as 'log.note', not {tool!r}")
    if args is not None and not isinstance(args, dict):
        raise BridgeError("BAD_REQUEST", f"args must be a dict, not {type(args).__name__}")
    if key is not None and not isinstance(key, str):
        raise BridgeError("BAD_REQUEST", f"key must be a string or None, not {type(key).__name__}")
    if not timeout > 0:
        raise BridgeError("BAD_REQUEST", f"timeout must be a positive number of seconds: {timeout}")
    request = {"id": request_id, "tool": tool, "args": args or {}, "key": key}
    try:
        text = json.dumps(request, allow_nan=False, ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError) as exc:
        raise BridgeError("BAD_REQUEST", f"args of {tool} are not JSON: {exc}") from None
    line = text.encode("utf-8") + b"\n"
    if len(line) > MAX_REQUEST_BYTES:
        raise BridgeError(
            "BAD_REQUEST",
            f"the request to {tool} is {len(line)} bytes; the bridge takes at most "
            f"{MAX_REQUEST_BYTES}: pass a file path instead of its content",
        )
    return line


_default: Client | None = None
_default_lock = threading.Lock()


def _forget_default() -> None:
    global _default, _default_lock
    # The child gets fresh state: the parent's lock may have been held when it forked.
    _default, _default_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_default)


def call(
    tool: str, args: dict[str, Any] | None = None, *, key: str | None = None, timeout: float = 300
) -> Any:
    """Call `tool` with `args` through this process's bridge connection and return the result.

    Raises:
        BridgeError: the call was refused or failed (failure_class says why), or the bridge
            cannot be reached.
    """
    global _default
    with _default_lock:
        if _default is None:
            _default = Client()
        client = _default
    return client.call(tool, args, key=key, timeout=timeout)


_MISSING: Any = object()


def _params_path() -> str:
    explicit = os.environ.get(PARAMS_ENV)
    if explicit:
        return explicit
    # meta/ holds both; the runner names the socket where the workspace is not at /workspace
    # (isolation "none").
    sock = os.environ.get(SOCKET_ENV)
    if sock:
        return os.path.join(os.path.dirname(sock), os.path.basename(PARAMS_FILE))
    return PARAMS_FILE


def _load_params(path: str) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            data = json.load(f)
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        raise ParameterError(
            "PARAMETER_INVALID", f"cannot read the run's parameters at {path}: {exc}"
        ) from None
    if not isinstance(data, dict):
        raise ParameterError(
            "PARAMETER_INVALID", f"the run's parameters at {path} are not a JSON object"
        )
    return data


def _record_read(path: str, name: str) -> None:
    # Best effort: the value was read whether or not the record can be written.
    record = os.path.join(os.path.dirname(path), PARAMS_READ_FILE)
    try:
        fd = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o644)
    except OSError:
        return
    try:
        os.write(fd, f"{name}\n".encode())
    except OSError:
        pass
    finally:
        os.close(fd)


def param(name: str, default: Any = _MISSING) -> Any:
    """The run's value of parameter `name` (str, int, float or bool), else `default`.

    Raises:
        ParameterError: the run has no parameter `name` and no default was given (the message
            lists the parameters it has), or the parameters file cannot be read.
    """
    if not isinstance(name, str) or not name:
        raise ParameterError("BAD_REQUEST", f"a parameter name is a string, not {name!r}")
    path = _params_path()
    params = _load_params(path)
    if name in params:
        _record_read(path, name)
        return params[name]
    if default is not _MISSING:
        return default
    raise ParameterError(
        "PARAMETER_INVALID",
        f"the run has no parameter {name!r}; declared: {', '.join(sorted(params)) or 'none'}",
    )
