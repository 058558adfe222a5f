"""Starts the sandbox launcher and watches it: wall clock, heartbeats, capped output, teardown."""

from __future__ import annotations

import json
import os
import select
import selectors
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities import telemetry_metrics

__all__ = ["Outcome", "supervise"]

HEARTBEAT_INTERVAL_S = 1.0
# After the main process exits, how long output pipes held open by escaped descendants (only
# possible with isolation "none") are still read before the platform stops waiting.
DRAIN_GRACE_S = 2.0
# After killing the sandbox, how long the launcher gets to reap it before its group is killed.
KILL_GRACE_S = 5.0
# Bound on waiting for the killed sandbox's pid namespace to empty.
TEARDOWN_WAIT_S = 10.0
_CHUNK = 65536


@dataclass(frozen=True)
class Outcome:
    """Raw facts about one launch, before classification."""

    returncode: int
    timed_out: bool
    cpu_s: float
    # Peak resident set size of the largest process the launcher reaped (the step's, in
    # practice), as its report says; 0 when it reported none (not in reap mode, or killed).
    peak_rss_bytes: int
    stdout: bytes
    stderr: bytes
    stdout_truncated: bool
    stderr_truncated: bool
    duration_ms: int
    child_pid: int | None
    launch_error: tuple[str, str] | None


class _Capped:
    """Keeps the first `cap` bytes of a stream; the rest is read and discarded, never stored."""

    def __init__(self, cap: int) -> None:
        self.data = bytearray()
        self.cap = cap
        self.truncated = False

    def feed(self, chunk: bytes) -> None:
        room = self.cap - len(self.data)
        if room > 0:
            self.data += chunk[:room]
        if len(chunk) > max(room, 0):
            self.truncated = True


def supervise(
    cmd: Callable[[dict[str, Any]], list[str]],
    spec: dict[str, Any],
    *,
    cwd: Path,
    wall_clock_s: float,
    output_cap: int,
    heartbeat: Callable[[], None] | None,
    status_pipe: tuple[int, int] | None,
) -> Outcome:
    """Run `cmd(spec)` in a new session and watch it to the end; takes over status_pipe."""
    report_r, report_w = os.pipe()
    pass_fds = [report_w] + ([status_pipe[1]] if status_pipe else [])
    try:
        proc = subprocess.Popen(
            cmd({**spec, "report_fd": report_w}),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            # bwrap's own environment is readable inside as /proc/1/environ: give it nothing.
            env={},
            cwd=cwd,
            start_new_session=True,
            pass_fds=pass_fds,
        )
    except BaseException:
        os.close(report_r)
        if status_pipe:
            os.close(status_pipe[0])
        raise
    finally:
        for fd in pass_fds:
            os.close(fd)
    watch = _Watch(proc, report_r, status_pipe[0] if status_pipe else None, output_cap)
    try:
        watch.run(wall_clock_s, heartbeat)
    finally:
        watch.reap()
    return watch.outcome()


class _Watch:
    def __init__(self, proc: subprocess.Popen[bytes], report: int, status: int | None, cap: int):
        assert proc.stdout is not None and proc.stderr is not None
        self.proc = proc
        self.started = time.monotonic()
        self.ended = self.started
        self.out = _Capped(cap)
        self.err = _Capped(cap)
        self.report = bytearray()
        self.status = bytearray()
        self.child_pid: int | None = None
        self.child_fd: int | None = None
        self.timed_out = False
        self.exited_at: float | None = None
        self.group_kill_at: float | None = None
        self.wait_status = 0
        self.cpu_s = 0.0
        self.sel = selectors.DefaultSelector()
        self.pidfd = os.pidfd_open(proc.pid)
        self.sel.register(self.pidfd, selectors.EVENT_READ, self._on_exit)
        self.streams: dict[int, Callable[[bytes], None]] = {
            proc.stdout.fileno(): self.out.feed,
            proc.stderr.fileno(): self.err.feed,
            report: self.report.extend,
        }
        if status is not None:
            self.streams[status] = self._on_status
        self.owned = [report] + ([status] if status is not None else [])
        for fd in self.streams:
            self.sel.register(fd, selectors.EVENT_READ, self._on_stream)

    def run(self, wall_clock_s: float, heartbeat: Callable[[], None] | None) -> None:
        deadline = self.started + wall_clock_s
        # The first beat after one interval, not at once: a heartbeat from this thread waits for
        # the worker's event loop, and most steps end well within the interval (the activity
        # was just dispatched, so Temporal has nothing to learn from a beat at time zero).
        next_beat = self.started + HEARTBEAT_INTERVAL_S
        while True:
            now = time.monotonic()
            if self.exited_at is None:
                if not self.timed_out and now >= deadline:
                    self.timed_out = True
                    # Killing the sandbox's pid 1 lets the launcher reap it and exit cleanly.
                    self._kill_sandbox()
                    self.group_kill_at = now + (KILL_GRACE_S if self.child_fd is not None else 0)
                if self.group_kill_at is not None and now >= self.group_kill_at:
                    self._kill_group()
            if heartbeat is not None and now >= next_beat:
                heartbeat()
                next_beat = now + HEARTBEAT_INTERVAL_S
            waits = [next_beat - now if heartbeat is not None else HEARTBEAT_INTERVAL_S]
            if self.exited_at is not None:
                if not self.streams or now >= self.exited_at + DRAIN_GRACE_S:
                    return
                waits.append(self.exited_at + DRAIN_GRACE_S - now)
            elif self.group_kill_at is not None:
                waits.append(self.group_kill_at - now)
            elif not self.timed_out:
                waits.append(deadline - now)
            for key, _ in self.sel.select(max(0.0, min(waits))):
                key.data(key.fd)

    def _on_stream(self, fd: int) -> None:
        chunk = os.read(fd, _CHUNK)
        if chunk:
            self.streams[fd](chunk)
        else:
            self.sel.unregister(fd)
            del self.streams[fd]

    def _on_status(self, chunk: bytes) -> None:
        # bwrap writes one JSON object per line; the first one carries the sandbox's pid 1.
        self.status += chunk
        while b"\n" in self.status:
            line, _, rest = bytes(self.status).partition(b"\n")
            self.status = bytearray(rest)
            doc = json.loads(line)
            if self.child_pid is None and "child-pid" in doc:
                self.child_pid = int(doc["child-pid"])
                telemetry_metrics.sandbox_started(time.monotonic() - self.started)
                try:
                    self.child_fd = os.pidfd_open(self.child_pid)
                except ProcessLookupError:
                    self.child_fd = None  # already gone: nothing left to tear down

    def _on_exit(self, fd: int) -> None:
        self.exited_at = time.monotonic()
        self.sel.unregister(fd)
        # Descendants still in the group (isolation "none") must not outlive the step.
        self._kill_group()

    def _kill_group(self) -> None:
        # Only called before the leader is reaped, so its pid cannot name another group yet.
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def _kill_sandbox(self) -> None:
        # bwrap --new-session puts the sandbox in its own session, out of reach of killpg; its
        # pid 1 would die with bwrap (--die-with-parent), this makes it immediate and certain.
        if self.child_fd is not None:
            try:
                signal.pidfd_send_signal(self.child_fd, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def reap(self) -> None:
        """Make sure nothing of the run is alive, collect its status, close every fd."""
        try:
            if self.proc.returncode is None:
                if self.exited_at is None:
                    # Interrupted (heartbeat raised, cancellation): stop everything now.
                    self._kill_sandbox()
                    select.select([self.pidfd], [], [], KILL_GRACE_S)
                    self._kill_group()
                _, status, usage = os.wait4(self.proc.pid, 0)
                self.proc.returncode = os.waitstatus_to_exitcode(status)
                self.wait_status = status
                self.cpu_s = usage.ru_utime + usage.ru_stime
                self.ended = time.monotonic()
            if self.child_fd is not None:
                self._kill_sandbox()
                # The sandbox's pid 1 exits only after the kernel has killed the whole namespace.
                select.select([self.child_fd], [], [], TEARDOWN_WAIT_S)
        finally:
            self.sel.close()
            for fd in (self.pidfd, self.child_fd, *self.owned):
                if fd is not None:
                    os.close(fd)
            assert self.proc.stdout is not None and self.proc.stderr is not None
            self.proc.stdout.close()
            self.proc.stderr.close()

    def outcome(self) -> Outcome:
        status, cpu_s, error, peak_kb = self.wait_status, self.cpu_s, None, 0
        for line in bytes(self.report).splitlines():
            doc = json.loads(line)
            if "error" in doc:
                error = (str(doc["error"]), str(doc["message"]))
            elif doc.get("status") is not None:
                # The launcher reaped the sandbox: its status and CPU time are the step's.
                status, cpu_s = int(doc["status"]), float(doc["cpu_s"])
                peak_kb = int(doc.get("maxrss_kb", 0))
        return Outcome(
            returncode=os.waitstatus_to_exitcode(status),
            timed_out=self.timed_out,
            cpu_s=cpu_s,
            peak_rss_bytes=peak_kb * 1024,
            stdout=bytes(self.out.data),
            stderr=bytes(self.err.data),
            stdout_truncated=self.out.truncated,
            stderr_truncated=self.err.truncated,
            duration_ms=int((self.ended - self.started) * 1000),
            child_pid=self.child_pid,
            launch_error=error,
        )
