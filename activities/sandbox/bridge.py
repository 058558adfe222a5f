"""The governed tool bridge (DESIGN §5): a Unix socket in meta/ that step code calls tools through.

Protocol: JSON lines over a stream socket. A request `{"id", "tool", "args", "key"}` gets one
reply, in order, `{"id", "ok": true, "result"}` or `{"id", "ok": false, "error": {"class",
"message"}}`. Each call is checked at call time, in this order: the tool exists, the step's
contract allows it (TOOL_NOT_ALLOWED), an earlier completed call with the same idempotency key
answers it (no dispatch, no charge), the step's bridge budget over all its attempts and the run's
token/cost budget (BUDGET_EXHAUSTED); then the handler runs. Every call is an event (see
bridge_ledger). The client side is activities/sandbox/client/forge_bridge.py.
"""

from __future__ import annotations

import logging
import os
import socket
import stat
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

from opentelemetry import context as otel_context

from activities.sandbox.bridge_accept import ACCEPTOR
from activities.sandbox.bridge_call import BridgeCall, ToolError, ToolHandler, ToolRefused, call_key
from activities.sandbox.bridge_ledger import BridgeLedger, StoredCall
from activities.sandbox.bridge_wire import (
    Request,
    error_reply,
    ok_reply,
    parse_request,
    too_long,
)
from activities.sandbox.bwrap import sandbox_identity
from activities.sandbox.client.forge_bridge import MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES
from activities.telemetry_spans import tool_outcome, tool_span
from compiler.hashing import sha256_of
from compiler.ladder.secrets.mask import mask_value
from schemas.bridge import BridgePolicy

__all__ = [
    "MAX_CONNECTIONS",
    "MAX_UNCHARGED",
    "BridgeCall",
    "BridgeLedger",
    "BridgeServer",
    "StoredCall",
    "ToolError",
    "ToolHandler",
    "ToolRefused",
    "call_key",
]

MAX_CONNECTIONS = 16
# Refused, replayed and malformed calls cost the step nothing, so they are capped per attempt
# instead: past the cap the bridge answers BRIDGE_OVERLOADED and records nothing more.
MAX_UNCHARGED = 256
# How long close() lets calls in flight finish: longer than http.request's longest timeout.
DRAIN_TIMEOUT_S = 150.0
_log = logging.getLogger(__name__)


class BridgeServer:
    """Serves one step attempt's bridge socket while the context is open.

    The worker's one acceptor thread (bridge_accept) hands each connection over; a thread per
    connection serves its calls. The socket is bound through a descriptor of its directory
    (never following a link the step could plant, and free of the 108-byte socket path limit)
    and made connectable only by the sandbox's uid. Closing stops accepting, lets calls in flight
    finish (up to DRAIN_TIMEOUT_S), then closes every connection and removes the socket if it is
    still the one it bound.
    """

    def __init__(
        self,
        socket_path: Path,
        *,
        policy: BridgePolicy,
        handlers: Mapping[str, ToolHandler],
        ledger: BridgeLedger,
        drain_timeout_s: float = DRAIN_TIMEOUT_S,
        key_material: Mapping[str, Callable[[dict[str, Any]], Any]] | None = None,
    ) -> None:
        """Serve one step attempt's calls under `policy`.

        key_material: per tool, what besides its arguments a call's result depends on (e.g. the
        digests of the files an evaluation reads), mixed into its idempotency key so a retried
        attempt replays a result only for the same content.
        """
        if ledger.policy != policy:
            raise ValueError(
                f"the ledger was built for step {ledger.policy.step_key} attempt "
                f"{ledger.policy.attempt}, the bridge for step {policy.step_key} attempt "
                f"{policy.attempt}: build both from the same BridgePolicy"
            )
        self.socket_path = socket_path
        self.policy = policy
        self._handlers = dict(handlers)
        self._key_material = dict(key_material or {})
        self._ledger = ledger
        self._drain_timeout_s = drain_timeout_s
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._in_flight = 0  # reserved against the step budget, not yet recorded
        self._busy = 0  # requests being handled
        self._uncharged = 0
        self._key_locks: dict[str, threading.Lock] = {}
        self._conns: set[socket.socket] = set()
        self._threads: set[threading.Thread] = set()
        self._closing = False
        self._listener: socket.socket | None = None
        self._dir_fd: int | None = None
        self._inode: tuple[int, int] | None = None
        self._trace_context: otel_context.Context | None = None

    # ---- lifecycle -------------------------------------------------------------------------

    def __enter__(self) -> BridgeServer:
        self.start()
        return self

    def __exit__(
        self, _t: type[BaseException] | None, _e: BaseException | None, _tb: TracebackType | None
    ) -> None:
        self.close()

    def start(self) -> None:
        """Bind, hand the socket to the sandbox uid, and start accepting.

        Raises:
            FileExistsError: something other than a socket is at socket_path.
            OSError: the directory cannot be opened (missing, or a symlink).
        """
        parent, name = self.socket_path.parent, self.socket_path.name
        self._dir_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            self._listener = self._bind(name)
        except BaseException:
            os.close(self._dir_fd)
            self._dir_fd = None
            raise
        self._listener.setblocking(False)  # accepted until none is left (_accept_ready)
        # Calls are served on other threads: their spans join the trace of who started this.
        self._trace_context = otel_context.get_current()
        ACCEPTOR.register(self._listener, self._accept_ready)

    def _bind(self, name: str) -> socket.socket:
        assert self._dir_fd is not None
        try:
            st = os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
        except FileNotFoundError:
            pass
        else:
            if not stat.S_ISSOCK(st.st_mode):
                raise FileExistsError(
                    f"{self.socket_path} exists and is not a socket; the workspace is not fresh "
                    "(prepare a new one for every attempt)"
                )
            os.unlink(name, dir_fd=self._dir_fd)  # a stale socket of an earlier bridge
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            listener.bind(f"/proc/self/fd/{self._dir_fd}/{name}")
            identity = sandbox_identity()
            if identity is not None:
                os.chown(name, *identity, dir_fd=self._dir_fd, follow_symlinks=False)
            # Connecting needs write permission: only the sandbox uid (and the worker) have it.
            os.chmod(name, 0o600, dir_fd=self._dir_fd)
            st = os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
            self._inode = (st.st_dev, st.st_ino)
            listener.listen(MAX_CONNECTIONS)
        except BaseException:
            listener.close()
            raise
        return listener

    def close(self) -> None:
        """Stop serving: finish calls in flight, close connections, remove the socket."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
        if self._listener is not None:
            ACCEPTOR.unregister(self._listener)  # no connection is handed over after this
            self._listener.close()
        deadline = time.monotonic() + self._drain_timeout_s
        with self._idle:
            drained = self._idle.wait_for(lambda: self._busy == 0, timeout=self._drain_timeout_s)
            conns, threads = list(self._conns), list(self._threads)
        if not drained:
            _log.warning(
                "tool bridge of step %s closed with calls still running after %.0f s; their "
                "events may land after the attempt ended",
                self.policy.step_key,
                self._drain_timeout_s,
            )
        for conn in conns:
            try:
                conn.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass  # the peer is already gone
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()) + 1.0)
        self._remove_socket()

    def _remove_socket(self) -> None:
        if self._dir_fd is None:
            return
        name = self.socket_path.name
        try:
            st = os.stat(name, dir_fd=self._dir_fd, follow_symlinks=False)
            # Only our own socket: the step may have replaced the entry with anything.
            if (st.st_dev, st.st_ino) == self._inode:
                os.unlink(name, dir_fd=self._dir_fd)
        except FileNotFoundError:
            pass  # the step removed it; nothing left to clean
        finally:
            os.close(self._dir_fd)
            self._dir_fd = None

    # ---- connections -----------------------------------------------------------------------

    def _accept_ready(self) -> bool:
        """Take the waiting connections (acceptor thread); False once the listener fails."""
        assert self._listener is not None
        while True:
            try:
                conn, _ = self._listener.accept()
            except BlockingIOError:
                return True  # none left waiting
            except OSError:
                return False  # closed, or failing: this attempt's bridge accepts no more
            conn.setblocking(True)  # served by a thread of its own, which waits on it
            with self._lock:
                full = len(self._conns) >= MAX_CONNECTIONS
                if not self._closing and not full:
                    self._conns.add(conn)
                    thread = threading.Thread(target=self._serve, args=(conn,), daemon=True)
                    self._threads.add(thread)
                    thread.start()
                    continue
            _refuse_connection(conn, full)

    def _serve(self, conn: socket.socket) -> None:
        buffer = bytearray()
        try:
            while True:
                newline = buffer.find(b"\n")
                if newline < 0:
                    if len(buffer) >= MAX_REQUEST_BYTES:
                        conn.sendall(self._handle(bytes(buffer)))  # refused as too long
                        return  # no way to find the next line boundary
                    chunk = conn.recv(1 << 16)
                    if not chunk:
                        return
                    buffer += chunk
                    continue
                line = bytes(buffer[:newline])
                del buffer[: newline + 1]
                conn.sendall(self._handle(line))
        except OSError:
            return  # the step went away or close() shut the connection down
        finally:
            with self._lock:
                self._conns.discard(conn)
                self._threads.discard(threading.current_thread())
            conn.close()

    def _handle(self, line: bytes) -> bytes:
        request = parse_request(line) if len(line) < MAX_REQUEST_BYTES else too_long()
        request_id = None if isinstance(request, str) else request[0]
        with self._lock:
            self._busy += 1
        policy = self.policy
        tool = "?" if isinstance(request, str) else str(request[1])
        try:
            ids = (policy.scope.tenant, policy.run_id, policy.step_key, policy.attempt)
            with tool_span(tool, *ids, parent=self._trace_context):
                return self._answer(request)
        except Exception:
            # A fault of the platform (store down, a bug), not of the step: logged with its
            # traceback, reported to the step as BRIDGE_FAULT, and the bridge keeps serving.
            _log.exception("tool bridge of step %s failed on a request", self.policy.step_key)
            return error_reply(
                request_id,
                "BRIDGE_FAULT",
                "the tool bridge failed on this call (a platform fault, recorded in the worker "
                "log); retry the call, or let the step fail and be retried",
            )
        finally:
            with self._idle:
                self._busy -= 1
                if self._closing and self._busy == 0:
                    self._idle.notify_all()

    # ---- one call --------------------------------------------------------------------------

    def _answer(self, request: Request | str) -> bytes:
        index = self._ledger.next_index()
        if isinstance(request, str):
            return self._refuse(None, index, "?", "BAD_REQUEST", request)
        request_id, tool, args, client_key = request
        if tool not in self._handlers:
            known = ", ".join(sorted(self._handlers)) or "none"
            return self._refuse(
                request_id, index, tool, "UNKNOWN_TOOL", f"no tool {tool!r} (tools: {known})"
            )
        if tool not in self.policy.allowed_tool_ids:
            allowed = ", ".join(self.policy.allowed_tool_ids) or "none"
            return self._refuse(
                request_id,
                index,
                tool,
                "TOOL_NOT_ALLOWED",
                f"step {self.policy.step_key} may not call {tool}: its contract allows {allowed}",
            )
        try:
            key = call_key(self.policy, tool, args, client_key)
            if tool in self._key_material:
                key = sha256_of({"call": key, "content": self._key_material[tool](args)})
        except (ValueError, RecursionError, OSError) as exc:
            return self._refuse(
                request_id,
                index,
                tool,
                "BAD_REQUEST",
                f"the args of {tool} have no canonical JSON form ({exc}); send integers beyond "
                "2**53 as strings and nest less deeply",
            )
        with self._key_lock(key):
            stored = self._ledger.find(key)
            if stored is not None:
                if not self._uncharged_allowed(index, tool):
                    tool_outcome("overloaded", "BRIDGE_OVERLOADED")
                    return error_reply(request_id, "BRIDGE_OVERLOADED", _overloaded())
                self._ledger.record_replay(call_index=index, tool=tool, stored=stored, call_key=key)
                tool_outcome("replayed")
                return ok_reply(request_id, mask_value(stored.result)[0])
            refusal = self._reserve()
            if refusal is not None:
                return self._refuse(request_id, index, tool, "BUDGET_EXHAUSTED", refusal, key)
            try:
                run_refusal = self._ledger.run_budget_refusal()
                if run_refusal is not None:
                    return self._refuse(
                        request_id, index, tool, "BUDGET_EXHAUSTED", run_refusal, key
                    )
                call = BridgeCall(self.policy, tool, key, client_key, index, self._ledger)
                return self._dispatch(request_id, call, args)
            finally:
                with self._lock:
                    self._in_flight -= 1

    def _dispatch(self, request_id: Any, call: BridgeCall, args: dict[str, Any]) -> bytes:
        started = time.perf_counter()
        error: tuple[str, str] | None = None
        result: Any = None
        sent: Any = None
        try:
            # Credentials never cross the bridge either way: not out of the sandbox in a call's
            # arguments, not into it in a result. The ledger records what was given and
            # returned; the event store masks that too and records each finding.
            result = self._handlers[call.tool](mask_value(args)[0], call)
            sent = mask_value(result)[0]
        except ToolRefused as refused:
            return self._refuse(
                request_id, call.index, call.tool, refused.failure_class, refused.reason, call.key
            )
        except ToolError as failed:
            error = (failed.failure_class, failed.message)
        except Exception as exc:
            # A handler's bug: logged, recorded as a failed call and reported, never swallowed.
            _log.exception("bridge tool %s crashed in step %s", call.tool, self.policy.step_key)
            error = ("TOOL_CRASHED", f"{call.tool} failed: {type(exc).__name__}: {exc}")
        reply = b""
        if error is None:
            try:
                reply = ok_reply(request_id, sent)
            except (TypeError, ValueError) as exc:
                error = ("TOOL_CRASHED", f"{call.tool} returned a value that is not JSON: {exc}")
        if error is None and len(reply) > MAX_RESPONSE_BYTES:
            error = (
                "RESULT_TOO_LARGE",
                f"{call.tool} returned {len(reply)} bytes; a reply carries at most "
                f"{MAX_RESPONSE_BYTES}: ask for less",
            )
        self._ledger.record_call(
            call_index=call.index,
            tool=call.tool,
            call_key=call.key,
            client_key=call.client_key,
            args=args,
            ok=error is None,
            result=result if error is None else None,
            error=error,
            duration_ms=int((time.perf_counter() - started) * 1000),
            emitted=call._emitted,
            size_hint=len(reply) if error is None else None,
        )
        tool_outcome("ok" if error is None else "error", None if error is None else error[0])
        return reply if error is None else error_reply(request_id, *error)

    def _refuse(
        self,
        request_id: Any,
        index: int,
        tool: str,
        failure_class: str,
        reason: str,
        key: str | None = None,
    ) -> bytes:
        if not self._uncharged_allowed(index, tool):
            tool_outcome("overloaded", "BRIDGE_OVERLOADED")
            return error_reply(request_id, "BRIDGE_OVERLOADED", _overloaded())
        self._ledger.record_refusal(
            call_index=index, tool=tool, failure_class=failure_class, reason=reason, call_key=key
        )
        tool_outcome("refused", failure_class)
        return error_reply(request_id, failure_class, reason)

    def _uncharged_allowed(self, index: int, tool: str) -> bool:
        """Whether one more refused or replayed call may still be answered and recorded.

        The first call past MAX_UNCHARGED is recorded as BRIDGE_OVERLOADED; after it, nothing is.
        """
        with self._lock:
            self._uncharged += 1
            count = self._uncharged
        if count == MAX_UNCHARGED + 1:
            self._ledger.record_refusal(
                call_index=index, tool=tool, failure_class="BRIDGE_OVERLOADED", reason=_overloaded()
            )
        return count <= MAX_UNCHARGED

    def _reserve(self) -> str | None:
        """Take one call of the step's bridge budget, or say why none is left."""
        budget = self.policy.bridge_call_budget
        with self._lock:
            used = self._ledger.dispatched_calls() + self._in_flight
            if used >= budget:
                return (
                    f"step {self.policy.step_key} has used {used} of its {budget} bridge calls "
                    "(counted over every attempt); raise budgets.bridge_calls_per_step in the "
                    "execution profile, or make fewer calls"
                )
            self._in_flight += 1
            return None

    def _key_lock(self, key: str) -> threading.Lock:
        # Two concurrent calls with one key: the second waits and is answered from the first.
        with self._lock:
            lock = self._key_locks.get(key)
            if lock is None:
                lock = self._key_locks[key] = threading.Lock()
            return lock


def _overloaded() -> str:
    return (
        f"this attempt made more than {MAX_UNCHARGED} refused or repeated calls; the bridge "
        "records no more of them and refuses the rest (fix the calls that are refused)"
    )


def _refuse_connection(conn: socket.socket, full: bool) -> None:
    why = f"more than {MAX_CONNECTIONS} open connections" if full else "the bridge is closing"
    try:
        conn.sendall(error_reply(None, "BRIDGE_BUSY", f"{why}; reuse one connection per process"))
    except OSError:
        pass  # the peer left already; it will see the closed connection
    finally:
        conn.close()
