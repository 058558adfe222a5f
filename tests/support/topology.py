"""`forge dev up --workers N …` for end-to-end tests: the CLI as a subprocess, as a user runs it.

`dev_topology("--workers", "2", "--postgres", "--s3", "--api")` yields the running topology
(its processes from `forge dev status --json` and the environment that reaches it) and takes it
down afterwards; `operator_token` makes a tenant and an operator key through `forge` itself.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.process.procs import alive

__all__ = [
    "RunningTopology",
    "clean_env",
    "dev_topology",
    "exported",
    "forge",
    "operator_token",
    "processes_of",
]

ROOT = Path(__file__).resolve().parents[2]


def forge(env: dict[str, str], *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    """`forge ARGS…` run from the checkout with exactly `env`."""
    return subprocess.run(
        [sys.executable, "-m", "workers.cli", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@contextmanager
def clean_env(extra: dict[str, str] | None = None) -> Iterator[dict[str, str]]:
    """This environment without FORGE_*/AWS_* and with a FORGE_HOME of its own (removed after,
    with whatever `forge dev down` can still stop), plus `extra` (e.g. a worker setting)."""
    # Not pytest's tmp_path: its 0700 root directory is closed to the forge-pg user.
    home = Path(tempfile.mkdtemp(prefix="forge-topology-"))
    home.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FORGE_", "AWS_"))}
    env["FORGE_HOME"] = str(home)
    env.update(extra or {})
    try:
        yield env
    finally:
        forge(env, "dev", "down", timeout=300)
        shutil.rmtree(home, ignore_errors=True)


@dataclass(frozen=True)
class RunningTopology:
    env: dict[str, str]  # the shell's environment plus `forge dev env`'s variables
    status: dict[str, Any]  # `forge dev status --json` right after `up`

    def process(self, name: str) -> dict[str, Any]:
        [found] = [p for p in self.status["processes"] if p["name"] == name]
        return found

    @property
    def api_url(self) -> str:
        return f"http://127.0.0.1:{self.process('api')['port']}"


@contextmanager
def dev_topology(*flags: str, env: dict[str, str] | None = None) -> Iterator[RunningTopology]:
    """`forge dev up FLAGS…` in a FORGE_HOME of its own, with `env` added to what its processes
    get; `forge dev down` afterwards."""
    with clean_env(env) as shell:
        up = forge(shell, "dev", "up", *flags)
        assert up.returncode == 0, up.stdout + up.stderr
        status = forge(shell, "dev", "status", "--json")
        assert status.returncode == 0, status.stdout + status.stderr
        state = json.loads(status.stdout)
        yield RunningTopology({**shell, **exported(shell)}, state)


def exported(env: dict[str, str]) -> dict[str, str]:
    """What `forge dev env` exports: every variable the topology's processes got."""
    printed = forge(env, "dev", "env")
    assert printed.returncode == 0, printed.stdout + printed.stderr
    pairs = [shlex.split(line)[1] for line in printed.stdout.splitlines()]
    assert all(line.startswith("export ") for line in printed.stdout.splitlines()), printed.stdout
    return dict(pair.split("=", 1) for pair in pairs)


def operator_token(env: dict[str, str], tenant: str = "acme") -> str:
    """A new tenant's operator key, made with `forge tenants create` and `forge keys create`."""
    made = forge(env, "tenants", "create", tenant)
    assert made.returncode == 0, made.stdout + made.stderr
    key = forge(env, "keys", "create", "--tenant", tenant, "--role", "operator", "--name", "ops")
    assert key.returncode == 0, key.stdout + key.stderr
    return str(key.stdout.split("store it now): ")[1].split()[0])


def processes_of(home: str) -> list[int]:
    """Live pids whose command line or environment names FORGE_HOME `home`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or not alive(int(entry.name)):
            continue
        try:
            seen = (entry / "cmdline").read_bytes() + (entry / "environ").read_bytes()
        except (FileNotFoundError, ProcessLookupError, PermissionError):
            continue
        if home.encode() in seen:
            found.append(int(entry.name))
    return found
