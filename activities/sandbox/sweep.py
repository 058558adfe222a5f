"""Sandbox launchers left by a worker that died, found at worker start and killed.

Every launcher is started by a worker process, names that worker's pid on its command line, and
is killed by the kernel when that worker dies (PR_SET_PDEATHSIG, set by the launcher itself).
The sweep covers what the signal cannot: a launcher whose worker died before it set the signal,
and the processes a step started outside bwrap (isolation "none") in the launcher's process
group. A launcher is an orphan when it leads its session and its parent is no longer the worker
it names.
"""

import logging
import os
import signal
from collections.abc import Iterator
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
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
            stat = (entry / "stat").read_text(errors="replace")
        except OSError:  # it exited meanwhile
            continue
        # The command name in parentheses may hold anything: the fields follow its last ')'.
        fields = stat[stat.rfind(")") + 2 :].split()
        yield int(entry.name), int(fields[1]), int(fields[3]), argv


def orphaned_launchers() -> list[int]:
    """Pids of launchers whose parent is no longer the worker that started them.

    A launcher leads its own session (the worker starts it so); the child it forks for bwrap
    has its command line until it execs, but neither leads a session nor is the worker's child:
    it is never taken for an orphan.
    """
    return [
        pid
        for pid, ppid, session, argv in _processes()
        if session == pid and (parent := launcher_parent(argv)) is not None and ppid != parent
    ]


def sweep_orphans() -> list[int]:
    """Kill each orphaned launcher's process group (it leads one), with its sandbox.

    bwrap dies with the launcher and takes the sandbox's pid namespace with it
    (--die-with-parent); a step run without bwrap is in the launcher's group.
    """
    killed = []
    for pid in orphaned_launchers():
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:  # no longer a group leader, or gone
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:  # gone, or not ours to kill (a worker not running as root)
                continue
        killed.append(pid)
    if killed:
        log.warning(
            "killed %d sandbox launcher(s) left running by a worker that died: pids %s",
            len(killed),
            ", ".join(map(str, killed)),
        )
    return killed
