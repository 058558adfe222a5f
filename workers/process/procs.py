"""Local background processes: spawn one detached, tell whether a pid is alive and ours, lock.

Shared by the embedded dev server (devserver.py) and the local topology (topology.py), whose
processes outlive the `forge dev up` that started them and are found again by their records.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import signal
import socket
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from pathlib import Path

__all__ = [
    "HOST",
    "PROBE_TIMEOUT",
    "alive",
    "cmdline",
    "free_port",
    "locked",
    "log_tail",
    "spawn",
    "start_ticks",
    "wait_gone",
]

HOST = "127.0.0.1"
POLL = 0.2
# How long one health probe (gRPC, SQL, HTTP) may take: on a loaded host a healthy process can
# answer slowly, and a probe that gives up sooner reports it unhealthy.
PROBE_TIMEOUT = 10
_LOG_TAIL_LINES = 20

# Pids this process spawned: only these may be reaped here, because reaping anyone
# else's child would steal the exit status its own Popen is waiting for.
_spawned: set[int] = set()


def spawn(argv: Sequence[str], env: Mapping[str, str], log: Path) -> int:
    """Start `argv` in a session of its own, output to `log`; returns its pid.

    posix_spawn rather than Popen: the process must outlive us, and a Popen object for a
    still-running child raises ResourceWarning when collected. SIGINT and SIGTERM are reset to
    their defaults: a shell's `&` leaves them ignored, and the process could not then be
    stopped gracefully. The log is a new file only its owner reads (0600), never one a planted
    symlink points at: a process's output may hold what it was given.

    Raises:
        OSError: The program could not be run.
    """
    log.unlink(missing_ok=True)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    actions: list[tuple[object, ...]] = [
        (os.POSIX_SPAWN_OPEN, 0, os.devnull, os.O_RDONLY, 0),
        (os.POSIX_SPAWN_OPEN, 1, str(log), flags, 0o600),
        (os.POSIX_SPAWN_DUP2, 1, 2),
    ]
    pid = os.posix_spawn(
        argv[0],
        list(argv),
        dict(env),
        file_actions=actions,
        setsid=True,
        setsigdef=(signal.SIGINT, signal.SIGTERM),
    )
    _spawned.add(pid)
    return pid


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone)."""
    # A process we spawned stays a zombie after it exits until we collect it; a zombie
    # not ours to reap still reads as dead below.
    if pid in _spawned:
        with contextlib.suppress(ChildProcessError):
            if os.waitpid(pid, os.WNOHANG)[0] == pid:
                _spawned.discard(pid)
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    # The state letter follows the parenthesised command name, which may contain spaces.
    return stat.rpartition(")")[2].split()[0] not in ("Z", "X")


def start_ticks(pid: int) -> int | None:
    """When `pid` started, in clock ticks since boot; None when it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # Field 22 (starttime); fields count from the state letter after the parenthesised name.
    return int(stat.rpartition(")")[2].split()[19])


def cmdline(pid: int) -> list[str] | None:
    """The argv of a live `pid`, or None when it is gone."""
    for _ in range(50):
        if not alive(pid):
            return None
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            return None
        if raw:
            return [part.decode(errors="replace") for part in raw.split(b"\0") if part]
        # The cmdline reads empty while the process is still inside exec; wait it out.
        time.sleep(0.01)
    return None


async def wait_gone(pid: int, timeout: float) -> bool:
    """Wait up to `timeout` seconds for `pid` to end; returns whether it did."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    # Ownership was checked before signalling; a pid is not reused while it is alive.
    while alive(pid):
        if loop.time() >= deadline:
            return False
        await asyncio.sleep(POLL)
    return True


@contextlib.asynccontextmanager
async def locked(path: Path) -> AsyncIterator[None]:
    """Hold an exclusive flock on `path`: serialises up/down across processes."""
    # Polling a non-blocking flock keeps the event loop free and cancellation clean.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                await asyncio.sleep(POLL)
        yield
    finally:
        os.close(fd)


def free_port() -> int:
    """A TCP port free on the loopback interface right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        port: int = sock.getsockname()[1]
        return port


def log_tail(path: Path, lines: int = _LOG_TAIL_LINES) -> str:
    """The last `lines` lines of a log, or a note saying why there are none."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return f"({path} does not exist)"
    except OSError as err:
        return f"({path} could not be read: {err.strerror})"
    tail = text.splitlines()[-lines:]
    return "\n".join(tail) if tail else f"({path} is empty)"
