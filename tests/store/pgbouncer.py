"""A real PgBouncer in transaction pooling mode in front of the test PostgreSQL server.

One server connection per database (`default_pool_size = 1`): every client transaction runs
on that same connection, whichever client sent it, as a busy transaction-mode pooler reuses
connections. Clients log in as the database's application role (`auth_type = any`: the test
server trusts loopback).
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.store.postgres import RlsDatabase
from workers.process.localpg import service_user
from workers.process.procs import free_port

_BINARY = "/usr/sbin/pgbouncer"
_INSTALL_HINT = (
    "PgBouncer is required by the transaction-pooling isolation test; install it, e.g. "
    "`apt-get install pgbouncer` (`make test` does, as root; CI must run it, never skip)"
)


@contextmanager
def pgbouncer_for(db: RlsDatabase, role: str) -> Iterator[str]:
    """PgBouncer (transaction mode, one server connection) for `db` as `role`; yields its URL."""
    binary = shutil.which("pgbouncer") or (_BINARY if Path(_BINARY).is_file() else None)
    if binary is None:
        pytest.fail(_INSTALL_HINT, pytrace=False)
    user = service_user()
    root = Path(tempfile.mkdtemp(prefix="forge-pgbouncer-"))
    port = free_port()
    config = root / "pgbouncer.ini"
    config.write_text(
        "[databases]\n"
        f"forge = host=127.0.0.1 port={db.server.port} dbname={db.database} user={role}\n"
        "[pgbouncer]\n"
        f"listen_addr = 127.0.0.1\nlisten_port = {port}\nunix_socket_dir =\n"
        "auth_type = any\npool_mode = transaction\n"
        "default_pool_size = 1\nmin_pool_size = 0\nreserve_pool_size = 0\nmax_client_conn = 50\n"
        f"logfile = {root / 'pgbouncer.log'}\npidfile = {root / 'pgbouncer.pid'}\n"
        "ignore_startup_parameters = extra_float_digits,options\n"
    )
    if user:
        info = pwd.getpwnam(user)
        for path in (root, config):
            os.chown(path, info.pw_uid, info.pw_gid)
    argv = [binary, str(config)]
    command = ["runuser", "-u", user, "--", *argv] if user else argv
    proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        _wait_listening(port, proc, root)
        yield f"postgresql+psycopg://{role}@127.0.0.1:{port}/forge"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
        shutil.rmtree(root, ignore_errors=True)


def _wait_listening(port: int, proc: subprocess.Popen[bytes], root: Path) -> None:
    for _ in range(200):
        if proc.poll() is not None:
            log = root / "pgbouncer.log"
            text = log.read_text(errors="replace") if log.exists() else "(no log)"
            raise RuntimeError(f"pgbouncer exited ({proc.returncode}):\n{text}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"pgbouncer did not listen on 127.0.0.1:{port}")
