"""Platform-side workspace access that never follows a path the sandboxed step could plant."""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "WORKSPACE_DIRS",
    "WorkspaceViolation",
    "chown_tree",
    "ensure_layout",
    "prepare_workspace_root",
    "safe_open",
    "safe_read",
    "safe_walk",
    "scan_violations",
]

WORKSPACE_DIRS = ("input", "work", "output", "meta")
# Bounds the platform's own work on a workspace a hostile step filled with millions of entries.
MAX_WALK_ENTRIES = 10_000
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: opening a FIFO the step planted must not hang the platform waiting for a writer.
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


class WorkspaceViolation(ForgeError):
    """A workspace path is a symlink, a special file or otherwise not what the platform expects."""

    code = ErrorCode.WORKSPACE_VIOLATION

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISLNK, "a symlink"),
        (stat.S_ISFIFO, "a fifo"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISDIR, "a directory"),
    ):
        if test(mode):
            return name
    return "not a regular file"


def _parts(rel: str) -> list[str]:
    parts = rel.split("/")
    if not rel or rel.startswith("/") or "\0" in rel or any(p in ("", ".", "..") for p in parts):
        raise WorkspaceViolation(rel, "not a plain relative path inside the workspace")
    return parts


def _open_dir(parent_fd: int, name: str, shown: str) -> int:
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):
            st = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
            raise WorkspaceViolation(
                shown, f"is {_kind(st.st_mode)}, expected a directory"
            ) from None
        raise


@contextmanager
def _dir_fd(workspace: Path, parts: list[str]) -> Iterator[int]:
    """An fd for workspace/parts..., opening each component without following symlinks."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for i, name in enumerate(parts):
            child = _open_dir(fd, name, "/".join(parts[: i + 1]))
            os.close(fd)
            fd = child
        yield fd
    finally:
        os.close(fd)


@contextmanager
def safe_open(workspace: Path, rel: str) -> Iterator[tuple[BinaryIO, int]]:
    """workspace/rel open for reading, and its size, refusing symlinks and non-regular files.

    Raises:
        WorkspaceViolation: a component is a symlink or the file is not regular.
        FileNotFoundError: the path does not exist.
    """
    *dirs, name = _parts(rel)
    with _dir_fd(workspace, dirs) as parent:
        st = os.stat(name, dir_fd=parent, follow_symlinks=False)
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceViolation(rel, f"is {_kind(st.st_mode)}, expected a regular file")
        fd = os.open(name, _FILE_FLAGS, dir_fd=parent)
    with os.fdopen(fd, "rb") as f:
        # Checked again on the open fd: the entry may have been swapped since the stat.
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise WorkspaceViolation(rel, "changed into a non-regular file while being opened")
        yield f, st.st_size


def safe_read(workspace: Path, rel: str, max_bytes: int) -> bytes:
    """Read workspace/rel, refusing symlinks anywhere on the path and non-regular files.

    Raises:
        WorkspaceViolation: a component is a symlink or the file is not regular, or it holds
            more than max_bytes.
        FileNotFoundError: the path does not exist.
    """
    chunks: list[bytes] = []
    with safe_open(workspace, rel) as (f, _):
        remaining = max_bytes + 1
        while remaining > 0 and (chunk := f.read(min(remaining, 1 << 20))):
            chunks.append(chunk)
            remaining -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise WorkspaceViolation(rel, f"is larger than the {max_bytes}-byte read limit")
    return data


def safe_walk(workspace: Path, rel_dir: str, *, max_entries: int = MAX_WALK_ENTRIES) -> list[str]:
    """Every regular file under workspace/rel_dir as sorted workspace-relative paths.

    A missing rel_dir yields []: the step may delete its own output directory, which means
    "no outputs", not a platform error.

    Raises:
        WorkspaceViolation: any entry is a symlink or special file, or there are more than
            max_entries entries.
    """
    parts = _parts(rel_dir)
    found: list[str] = []
    try:
        with _dir_fd(workspace, parts) as fd:
            _walk(fd, rel_dir, found, max_entries)
    except FileNotFoundError:
        return []
    return sorted(found)


def _walk(fd: int, shown: str, found: list[str], max_entries: int) -> None:
    with os.scandir(fd) as entries:
        for entry in entries:
            path = f"{shown}/{entry.name}"
            if len(found) >= max_entries:
                raise WorkspaceViolation(shown, f"holds more than {max_entries} entries")
            if entry.is_dir(follow_symlinks=False):
                child = _open_dir(fd, entry.name, path)
                try:
                    _walk(child, path, found, max_entries)
                finally:
                    os.close(child)
            elif entry.is_file(follow_symlinks=False):
                found.append(path)
            else:
                mode = entry.stat(follow_symlinks=False).st_mode
                raise WorkspaceViolation(path, f"is {_kind(mode)}, expected a regular file")


def prepare_workspace_root(root: Path) -> Path:
    """Create the directory every step workspace lives under, private to this user.

    It may sit in a shared directory such as /var/tmp, so every directory on its path must be a
    real directory (no symlink) owned by root or this user, and writable by nobody else unless
    it is sticky (like /tmp); the root itself must be this user's alone. Otherwise another user
    could swap a directory for a symlink and have the platform write (and chown) through it.

    Raises:
        WorkspaceViolation: A directory on the path is not such a directory, or the root
            cannot be created.
    """
    root = Path(os.path.abspath(root))
    try:
        root.mkdir(mode=0o700, parents=True, exist_ok=True)
    except OSError as exc:
        raise WorkspaceViolation(
            str(root),
            f"cannot create the workspace root ({exc.strerror}); set FORGE_WORKSPACE_ROOT to a "
            "directory this user may create",
        ) from None
    me = os.geteuid()
    for path in [*reversed(root.parents), root]:
        st = path.lstat()
        problem = None
        if not stat.S_ISDIR(st.st_mode):
            problem = f"is {_kind(st.st_mode)}, expected a directory"
        elif path == root and (st.st_uid != me or st.st_mode & 0o077):
            problem = (
                f"must be owned by uid {me} and open to nobody else (it is owned by uid "
                f"{st.st_uid}, mode {stat.S_IMODE(st.st_mode):o})"
            )
        elif st.st_uid not in (0, me) or (st.st_mode & 0o022 and not st.st_mode & stat.S_ISVTX):
            problem = (
                f"is owned by uid {st.st_uid} with mode {stat.S_IMODE(st.st_mode):o}: another "
                "user could replace what lies below it"
            )
        if problem is not None:
            raise WorkspaceViolation(
                str(path), f"{problem}; remove it or set FORGE_WORKSPACE_ROOT elsewhere"
            )
    return root


def ensure_layout(workspace: Path) -> None:
    """Create workspace/{input,work,output,meta}; refuse any that exists but is not a real dir."""
    workspace.mkdir(parents=True, exist_ok=True)
    for name in WORKSPACE_DIRS:
        path = workspace / name
        try:
            path.mkdir()
        except FileExistsError:
            mode = path.lstat().st_mode
            if not stat.S_ISDIR(mode):
                raise WorkspaceViolation(name, f"is {_kind(mode)}, expected a directory") from None


def chown_tree(workspace: Path, uid: int, gid: int) -> None:
    """Give the whole workspace to the sandbox user, changing links themselves, never targets."""
    fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        os.chown(fd, uid, gid)
        _chown_children(fd, uid, gid)
    finally:
        os.close(fd)


def _chown_children(fd: int, uid: int, gid: int) -> None:
    with os.scandir(fd) as entries:
        for entry in entries:
            os.chown(entry.name, uid, gid, dir_fd=fd, follow_symlinks=False)
            if entry.is_dir(follow_symlinks=False):
                child = os.open(entry.name, _DIR_FLAGS, dir_fd=fd)
                try:
                    _chown_children(child, uid, gid)
                finally:
                    os.close(child)


def scan_violations(workspace: Path, *, ignore_sockets_in: str = "meta") -> list[str]:
    """Escape attempts visible after a run: symlinks and special files in output/ and meta/.

    Sockets in meta/ are skipped because the tool bridge's own socket lives there.
    """
    problems: list[str] = []
    seen = 0
    for top in ("output", "meta"):
        try:
            mode = os.lstat(workspace / top).st_mode
        except FileNotFoundError:
            continue
        if not stat.S_ISDIR(mode):
            problems.append(f"{top}/ was replaced by {_kind(mode)}")
            continue
        for dirpath, dirnames, filenames in os.walk(workspace / top):
            for name in dirnames + filenames:
                seen += 1
                if seen > MAX_WALK_ENTRIES:
                    problems.append(f"output/ and meta/ hold more than {MAX_WALK_ENTRIES} entries")
                    return problems
                full = Path(dirpath) / name
                st = full.lstat()
                rel = full.relative_to(workspace).as_posix()
                if stat.S_ISLNK(st.st_mode):
                    problems.append(f"planted symlink {rel} -> {os.readlink(full)[:200]}")
                elif stat.S_ISSOCK(st.st_mode) and top == ignore_sockets_in:
                    continue
                elif not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                    problems.append(f"special file {rel} ({_kind(st.st_mode)})")
    return problems
