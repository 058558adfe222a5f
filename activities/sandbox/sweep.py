"""Sandbox launchers left by a worker that died, found at worker start and killed.

Every launcher is started by a worker process, names that worker's pid on its command line, and
is killed by the kernel when that worker dies (PR_SET_PDEATHSIG, set by the launcher itself).
The sweep covers what the signal cannot: a launcher whose worker died before it set the signal
(killed with its process group). A step run without bwrap (isolation "none") has exec'd over its
launcher, so its command line no longer names a worker: it dies by the signal alone, and its own
children may outlive it. A launcher is an orphan when it leads its session and its parent is no
longer the worker it names.
"""

import logging
import os
import signal
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path

from activities.sandbox import launcher
from activities.sandbox.native import NATIVE_NAME

log = logging.getLogger(__name__)
PROC = Path("/proc")


def launcher_parent(argv: list[str]) -> int | None:
    """The worker pid a launcher's command line names; None when it is not a launcher's.

    Native: `forge-sandbox-launcher REPORT_FD PARENT_PID ...`; Python: `python -I -S
    launcher.py PARENT_PID SPEC`. Only plain integers are read, never the spec.
    """
    if len(argv) > 2 and Path(argv[0]).name == NATIVE_NAME:
        named = argv[2]
    elif len(argv) > 4 and argv[3] == launcher.__file__:
        named = argv[4]
    else:
        return None
    return int(named) if named.isdigit() else None


def _processes() -> Iterator[tuple[int, int, int, list[str]]]:
    """(pid, parent pid, session id, argv) of each process visible in /proc."""
    for entry in PROC.iterdir():
        if entry.name.isdigit():
            yield from _process(int(entry.name))


def _process(pid: int) -> Iterator[tuple[int, int, int, list[str]]]:
    """(pid, parent pid, session id, argv) of one process, if it is still there."""
    entry = PROC / str(pid)
    try:
        argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
        stat = (entry / "stat").read_text(errors="replace")
    except OSError:  # it exited meanwhile
        return
    # The command name in parentheses may hold anything: the fields follow its last ')'.
    fields = stat[stat.rfind(")") + 2 :].split()
    yield pid, int(fields[1]), int(fields[3]), argv


def _pid_namespace(pid: int | str) -> str | None:
    try:
        return os.readlink(PROC / str(pid) / "ns" / "pid")
    except OSError:
        return None


def _is_orphan(pid: int, ppid: int, session: int, argv: list[str]) -> bool:
    """A launcher of this pid namespace whose parent is no longer the worker it names.

    A launcher leads its own session (the worker starts it so); the child it forks for bwrap
    has its command line until it execs, but neither leads a session nor is the worker's child:
    it is never taken for an orphan. A launcher in another pid namespace (a worker in a
    container, seen from the host) names a pid of that namespace: it is left alone.
    """
    parent = launcher_parent(argv)
    return (
        parent is not None
        and session == pid
        and ppid != parent
        and _pid_namespace(pid) == _pid_namespace("self")
    )


def orphaned_launchers() -> list[int]:
    """Pids of launchers whose parent is no longer the worker that started them."""
    return [seen[0] for seen in _processes() if _is_orphan(*seen)]


def _still_orphan(pid: int) -> bool:
    """Read again (after a pidfd pins the process): the pid was not reused meanwhile."""
    return any(_is_orphan(*seen) for seen in _process(pid))


def sweep_orphans() -> list[int]:
    """Kill each orphaned launcher's process group (it leads one), with its sandbox.

    bwrap dies with the launcher and takes the sandbox's pid namespace with it
    (--die-with-parent); a step run without bwrap is in the launcher's group.
    """
    killed = []
    for pid in orphaned_launchers():
        try:
            pinned = os.pidfd_open(pid)  # the pid now names this process until it is closed
        except OSError:  # gone
            continue
        try:
            if not _still_orphan(pid):
                continue
            signal.pidfd_send_signal(pinned, signal.SIGKILL)
            with suppress(OSError):  # its group: bwrap's outer process with it
                os.killpg(pid, signal.SIGKILL)
        except OSError:  # gone, or not ours to kill (a worker not running as root)
            continue
        finally:
            os.close(pinned)
        killed.append(pid)
    if killed:
        log.warning(
            "killed %d sandbox launcher(s) left running by a worker that died: pids %s",
            len(killed),
            ", ".join(map(str, killed)),
        )
    return killed
