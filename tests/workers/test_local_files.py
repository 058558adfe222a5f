"""Files the local topology writes as root into directories others may write: never through a
symlink planted there, and readable only by their owner (the initdb password, process logs)."""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from workers.process import localpg
from workers.process.localpg import LocalPostgres, service_user
from workers.process.procs import free_port, spawn, wait_gone


@pytest.fixture
def open_dir() -> Iterator[Path]:
    # Not pytest's tmp_path: its 0700 root directory is closed to the forge-pg user.
    path = Path(tempfile.mkdtemp(prefix="forge-files-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file a planted symlink points at: it must keep its content, mode and owner."""
    target = tmp_path / "victim"
    target.write_text("untouched\n")
    target.chmod(0o644)
    return target


def _unchanged(victim: Path) -> None:
    info = victim.stat()
    assert victim.read_text() == "untouched\n"
    assert (stat.S_IMODE(info.st_mode), info.st_uid) == (0o644, os.getuid())


def test_the_initdb_password_file_is_new_0600_and_the_service_users(
    open_dir: Path, victim: Path
) -> None:
    user = service_user()
    pwfile = open_dir / "initdb-password"
    pwfile.symlink_to(victim)
    localpg._write_private(pwfile, "s3cret\n", user)
    info = pwfile.lstat()
    assert stat.S_ISREG(info.st_mode)  # the symlink was replaced, not written through
    assert stat.S_IMODE(info.st_mode) == 0o600
    expected_uid = pwd.getpwnam(user).pw_uid if user else os.getuid()
    assert info.st_uid == expected_uid
    assert pwfile.read_text() == "s3cret\n"
    _unchanged(victim)


@pytest.mark.timeout(300)
def test_initdb_with_a_planted_symlink_writes_nothing_through_it(
    open_dir: Path, victim: Path
) -> None:
    cluster = LocalPostgres.at(open_dir)
    cluster.root.mkdir()
    if cluster.user is not None:
        info = pwd.getpwnam(cluster.user)
        os.chown(cluster.root, info.pw_uid, info.pw_gid)
    (cluster.root / "initdb-password").symlink_to(victim)
    try:
        pid = cluster.start(free_port())
        assert pid == cluster.pid()
    finally:
        cluster.stop()
    _unchanged(victim)
    assert not (cluster.root / "initdb-password").exists()
    assert not (cluster.root / "initdb-password").is_symlink()


async def test_a_process_log_is_new_0600_and_never_a_planted_symlink(
    open_dir: Path, victim: Path
) -> None:
    old = open_dir / "old.log"
    old.write_text("an earlier run\n")
    old.chmod(0o644)
    planted = open_dir / "planted.log"
    planted.symlink_to(victim)
    for log in (old, planted, open_dir / "new.log"):
        pid = spawn([sys.executable, "-c", "print('hello')"], dict(os.environ), log)
        assert await wait_gone(pid, 60)
        info = log.lstat()
        assert stat.S_ISREG(info.st_mode), log
        assert stat.S_IMODE(info.st_mode) == 0o600, log
        assert log.read_text() == "hello\n", log
    _unchanged(victim)
