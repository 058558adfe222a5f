"""The bubblewrap command line, the unprivileged sandbox identity and the Python runtime binds."""

from __future__ import annotations

import functools
import grp
import os
import pwd
import site
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "SANDBOX_USER",
    "STAGE_DIR",
    "Bind",
    "bwrap_argv",
    "python_runtime_paths",
    "sandbox_identity",
    "supports",
]

SANDBOX_USER = "forge-sandbox"
# Root-owned mount point for the per-run private binds (see launcher._stage_binds); /run rather
# than /tmp because nobody else can pre-create or replace it there.
STAGE_DIR = Path("/run/forge-sandbox")
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
    try:
        entry = pwd.getpwnam(SANDBOX_USER)
    except KeyError:
        _create_user()
        try:
            entry = pwd.getpwnam(SANDBOX_USER)
        except KeyError:
            return pwd.getpwnam("nobody").pw_uid, grp.getgrnam("nogroup").gr_gid
    return entry.pw_uid, entry.pw_gid


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


def python_runtime_paths() -> list[Path]:
    """Host directories the project's interpreter needs, outside /usr, bound read-only as-is.

    The interpreter prefix (stdlib, lib-dynload, libpython), the venv (pyvenv.cfg and
    site-packages, so pydantic and yaml import) and any other site-packages directory.
    """
    exe_dir = Path(os.path.realpath(sys.executable)).parent
    candidates = [
        Path(sys.base_prefix),
        Path(sys.base_prefix).resolve(),
        Path(sys.prefix),
        exe_dir,
        *(Path(p) for p in site.getsitepackages()),
    ]
    kept: list[Path] = []
    for path in sorted(
        {p.absolute() for p in candidates if p.is_dir()}, key=lambda p: len(p.parts)
    ):
        if path.is_relative_to("/usr") or any(path.is_relative_to(k) for k in kept):
            continue
        kept.append(path)
    return kept


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
