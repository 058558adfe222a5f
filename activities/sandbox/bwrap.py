"""The bubblewrap command line, the unprivileged sandbox identity and what may be bound."""

from __future__ import annotations

import contextlib
import functools
import grp
import os
import pwd
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SANDBOX_USER",
    "STAGE_DIR",
    "Bind",
    "bwrap_argv",
    "host_path_problem",
    "sandbox_identity",
    "supports",
]

SANDBOX_USER = "forge-sandbox"
# Root-owned mount point for the per-run private binds (see launcher._stage_binds); /run rather
# than /tmp because nobody else can pre-create or replace it there.
STAGE_DIR = Path("/run/forge-sandbox")
_USERADD_ATTEMPTS = 5
_TOP_LEVEL = ("bin", "sbin", "lib", "lib32", "lib64", "libx32")


@dataclass(frozen=True)
class Bind:
    """One host path bound into the sandbox at dest."""

    source: Path
    dest: str
    writable: bool = False


@functools.cache
def sandbox_identity() -> tuple[int, int] | None:
    """The uid/gid step code runs as when the worker is root; None when it is not root.

    Creates the `forge-sandbox` system user on first use; falls back to nobody/nogroup when
    the user cannot be created (no useradd, read-only /etc).
    """
    if os.geteuid() != 0:
        return None
    # Workers starting together race for /etc/passwd's lock: useradd fails for all but one, so
    # look again and retry a few times before settling for nobody.
    for attempt in range(_USERADD_ATTEMPTS + 1):
        try:
            entry = pwd.getpwnam(SANDBOX_USER)
        except KeyError:
            if attempt == _USERADD_ATTEMPTS:
                break
            time.sleep(0.2 * attempt)
            _create_user()
            continue
        return entry.pw_uid, entry.pw_gid
    return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid


def _create_user() -> None:
    try:
        subprocess.run(
            [
                "useradd",
                "--system",
                "--user-group",
                "--no-create-home",
                "--home-dir",
                "/nonexistent",
                "--shell",
                "/usr/sbin/nologin",
                SANDBOX_USER,
            ],
            check=False,
            capture_output=True,
            timeout=30,
        )
    except (OSError, subprocess.TimeoutExpired):
        # The caller falls back to nobody/nogroup; nothing to clean up.
        return


@functools.cache
def supports(bwrap: str, flag: str) -> bool:
    """Whether this bwrap build knows a flag (--disable-userns arrived in 0.8)."""
    result = subprocess.run([bwrap, "--help"], capture_output=True, text=True, check=False)
    return flag in result.stdout


# The Forge checkout (this file is activities/sandbox/bwrap.py in it).
_CHECKOUT = Path(__file__).resolve().parents[2]


@functools.cache
def _private_roots() -> tuple[Path, ...]:
    """Host directories whose paths must never appear inside a sandbox (and their real paths).

    Fixed for the process, so computed once: every sandbox start checks its binds against them.
    """
    roots = [Path("/root"), Path("/home"), _CHECKOUT, Path(sys.prefix), Path(sys.base_prefix)]
    with contextlib.suppress(KeyError):  # a uid with no passwd entry has no home to hide
        roots.append(Path(pwd.getpwuid(os.getuid()).pw_dir))
    roots += [r.resolve() for r in roots]
    return tuple(r for r in dict.fromkeys(roots) if r != Path("/"))


def host_path_problem(path: Path, what: str, fix: str) -> str | None:
    """Why `path` may not be bound into a sandbox, or None when it is neutral.

    A bind's source shows in bwrap's command line (pid 1 inside) and in /proc/self/mountinfo,
    so nothing bound may live in the checkout, the worker's venv or interpreter, or any home
    directory: the step would learn where the host keeps things. `fix` says what to do.
    """
    candidates = {path.absolute(), path.resolve()}
    for root in _private_roots():
        for candidate in candidates:
            if candidate == root or candidate.is_relative_to(root):
                return (
                    f"the {what} {path} is inside {root}, whose path would be visible to step "
                    f"code in the sandbox; {fix}"
                )
    return None


def _hidden_under_usr() -> list[str]:
    """Directories of /usr that hold the host's own Python packages (pip's, Debian's python3-*).

    /usr is bound whole for the system's programs and libraries, and Debian's interpreter is
    reachable as /usr/bin/python3.11: without these mounted over, step code could import what
    the host installed there, or Forge itself where it is installed under /usr/local.
    """
    found = [Path("/usr/local")]
    for pattern in ("lib/python3*/dist-packages", "lib/python3*/site-packages"):
        found += sorted(Path("/usr").glob(pattern))
    return [str(p) for p in found if p.is_dir() and not p.is_symlink()]


def bwrap_argv(
    bwrap: str,
    argv: Sequence[str],
    *,
    binds: Sequence[Bind],
    env: Mapping[str, str],
    status_fd: int,
    tmpfs_bytes: int,
) -> list[str]:
    """The full bwrap command: fresh namespaces, read-only system, the given binds, argv last."""
    cmd = [bwrap, "--unshare-all", "--unshare-user"]
    if supports(bwrap, "--disable-userns"):
        # Nested user namespaces would give step code a full capability set to attack the kernel.
        cmd.append("--disable-userns")
    cmd += [
        "--new-session",  # no controlling terminal to inject keystrokes into (TIOCSTI)
        "--die-with-parent",
        "--cap-drop",
        "ALL",
        "--hostname",
        "forge-sandbox",
        "--json-status-fd",
        str(status_fd),
        "--clearenv",
    ]
    for key, value in env.items():
        cmd += ["--setenv", key, value]
    cmd += ["--ro-bind", "/usr", "/usr"]
    for hidden in _hidden_under_usr():
        # Empty and read-only: Python packages the host installed outside the step runtime.
        cmd += ["--size", "4096", "--tmpfs", hidden, "--remount-ro", hidden]
    for name in _TOP_LEVEL:
        host = Path("/") / name
        if host.is_symlink():
            cmd += ["--symlink", os.readlink(host), str(host)]
        elif host.is_dir():
            cmd += ["--ro-bind", str(host), str(host)]
    # /dev and the root are tmpfs without a size cap, so they end read-only; /dev/shm and /tmp
    # are the only scratch space outside /workspace and are capped.
    cmd += ["--proc", "/proc", "--dev", "/dev"]
    cmd += ["--size", str(tmpfs_bytes), "--tmpfs", "/dev/shm", "--remount-ro", "/dev"]
    cmd += ["--size", str(tmpfs_bytes), "--tmpfs", "/tmp"]
    for bind in binds:
        cmd += ["--bind" if bind.writable else "--ro-bind", str(bind.source), bind.dest]
    cmd += ["--remount-ro", "/", "--chdir", "/workspace", "--"]
    # bwrap exports PWD after --clearenv; env(1) removes it so the step sees exactly `env`.
    return [*cmd, "/usr/bin/env", "-u", "PWD", "--", *argv]
