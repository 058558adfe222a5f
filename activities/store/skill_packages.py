"""Reading a skill package directory as untrusted input, and sealing a materialized copy.

The registry's rules for what a package may hold: regular files only (no symlinks, FIFOs or
devices, checked with lstat and never followed), at most MAX_FILES files of at most
MAX_FILE_BYTES each and MAX_PACKAGE_BYTES in all; and its digest, over every file.
"""

from __future__ import annotations

import os
import shutil
import stat
from collections.abc import Mapping
from pathlib import Path

from activities.store.errors import StoreError
from compiler.hashing import sha256_of
from schemas.error_codes import ErrorCode

__all__ = [
    "MAX_FILES",
    "MAX_FILE_BYTES",
    "MAX_PACKAGE_BYTES",
    "SKILL_FILE",
    "SkillNotRegistered",
    "SkillPackageRefused",
    "SkillRegistryError",
    "package_digest",
    "package_files",
    "remove_tree",
    "seal_tree",
]

MAX_FILES = 500
MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_PACKAGE_BYTES = 64 * 1024 * 1024
# Build and VCS debris is not part of a package (and would blow the file cap).
_IGNORED_DIRS = frozenset({"__pycache__", ".git"})
SKILL_FILE = "SKILL.md"


class SkillRegistryError(StoreError):
    """Base class of the skill registry's errors; each message says what to do."""


class SkillPackageRefused(SkillRegistryError, ValueError):
    """A package directory cannot be registered (unsafe, too large, or an invalid SKILL.md)."""

    code = ErrorCode.SKILL_PACKAGE_REFUSED


class SkillNotRegistered(SkillRegistryError, LookupError):
    """The tenant has no such skill (or not at the requested digest)."""

    code = ErrorCode.SKILL_NOT_REGISTERED


def package_digest(skill_id: str, files: Mapping[str, str]) -> str:
    """The registry digest of a package: its id and every file's sha256, by relative path."""
    return sha256_of({"skill_id": skill_id, "files": dict(sorted(files.items()))})


def package_files(
    directory: Path, max_files: int, max_file_bytes: int
) -> list[tuple[str, Path, int]]:
    """(relative posix path, path, size) of every regular file, sorted; refuses the unsafe."""
    if directory.is_symlink() or not directory.is_dir():
        raise SkillPackageRefused(
            f"{directory}: not a directory (or a symlink to one); pass the package directory "
            f"itself, the one holding {SKILL_FILE}"
        )
    found: list[tuple[str, Path, int]] = []
    for root, dirs, names in os.walk(directory, followlinks=False):
        dirs[:] = sorted(d for d in dirs if d not in _IGNORED_DIRS)
        for name in [*dirs, *sorted(names)]:
            path = Path(root) / name
            rel = path.relative_to(directory).as_posix()
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise SkillPackageRefused(
                    f"{directory}: {rel} is a symlink; a skill package holds regular files only: "
                    "replace it with a copy of what it points to"
                )
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise SkillPackageRefused(f"{directory}: {rel} is not a regular file")
            try:
                rel.encode("utf-8")
            except UnicodeEncodeError:
                raise SkillPackageRefused(
                    f"{directory}: {rel!r} is not a UTF-8 file name; rename it"
                ) from None
            size = path.lstat().st_size
            if size > max_file_bytes:
                raise SkillPackageRefused(
                    f"{directory}: {rel} is {size:,} bytes; a package file is at most "
                    f"{max_file_bytes:,} bytes: move large data out of the package"
                )
            found.append((rel, path, size))
            if len(found) > max_files:
                raise SkillPackageRefused(
                    f"{directory}: more than {max_files} files; a skill package holds at most "
                    f"{max_files}: remove generated or vendored files"
                )
    return sorted(found)


def seal_tree(root: Path) -> None:
    """Files 0o444, directories 0o555, bottom-up, in a tree we wrote (it holds no symlinks)."""
    for here, dirs, names in os.walk(root, topdown=False):
        for name in names:
            os.chmod(Path(here) / name, 0o444)
        for name in dirs:
            os.chmod(Path(here) / name, 0o555)
    os.chmod(root, 0o555)


def remove_tree(path: Path) -> None:
    """Remove a (possibly sealed) tree we wrote; a symlink is removed, never followed."""
    if path.is_symlink() or path.is_file():
        path.unlink()
        return
    if not path.exists():
        return
    for here, dirs, _ in os.walk(path):
        os.chmod(here, 0o755)
        dirs[:] = [d for d in dirs if not (Path(here) / d).is_symlink()]
    shutil.rmtree(path)
