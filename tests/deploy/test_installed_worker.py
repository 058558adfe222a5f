"""deploy/install.sh into a temporary prefix, and a worker from it as an unprivileged user.

The image's layout without the image: the script installs uv, the project from uv.lock, the
native launcher and the sealed step runtime into /var/tmp/forge-install-XXXX; `forge worker`
from that prefix then runs as a user that is neither root nor forge-sandbox, against the
session's Temporal dev server and a SQLite store in a FORGE_HOME that user owns, and a run
submitted with `forge run --detach` (same prefix, same user) completes a sandboxed step whose
code reports the uid it ran as. The worker's fail-closed start is checked with real failures:
a step runtime that is not there, and a host (a user namespace) that allows no namespaces.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from temporalio.client import WorkflowHandle

from activities.sandbox.bwrap import SANDBOX_USER
from activities.store.artifacts import open_artifact_store
from activities.store.events import open_event_store
from schemas.run import RunResult
from schemas.scope import Scope
from tests.deploy.compose import ROOT
from tests.workflows.engine import forge_client
from tests.workflows.plans import code_step, plan

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0,
    reason="switching to an unprivileged user (setpriv) and installing into a root-owned "
    "prefix need root",
)

USER = "forge-e2e"
DOCS = "docs/security.md#sandboxes-in-containers"
RUN_WAIT_S = 300
WHO = (
    "import json, os, sys\n"
    "who = {'uid': os.getuid(), 'gid': os.getgid(), 'runtime': sys.prefix}\n"
    "open('output/who.json', 'w').write(json.dumps(who))\n"
)


@dataclass(frozen=True)
class Installed:
    prefix: Path
    base: Path  # a neutral directory holding FORGE_HOME, workspaces, the plan
    uid: int
    gid: int

    @property
    def forge(self) -> str:
        return str(self.prefix / "bin" / "forge")

    def argv(self, env: dict[str, str], *args: str) -> list[str]:
        """`forge ARGS` as the unprivileged user, with exactly `env` (nothing of ours)."""
        pairs = [f"{k}={v}" for k, v in env.items()]
        ids = [f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups"]
        return ["setpriv", *ids, "--", "env", "-i", *pairs, self.forge, *args]

    def env(self, **extra: str) -> dict[str, str]:
        home = self.base / "home"
        return {
            "PATH": "/usr/bin:/bin",
            "HOME": str(home),
            "FORGE_HOME": str(home),
            "FORGE_WORKSPACE_ROOT": str(self.base / "workspaces"),
            "FORGE_STEP_RUNTIME": str(self.prefix / "runtime"),
            **extra,
        }


def _user() -> tuple[int, int]:
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--user-group", "--no-create-home", "--home-dir",
             "/nonexistent", "--shell", "/usr/sbin/nologin", USER],
            check=True,
            capture_output=True,
        )  # fmt: skip
        entry = pwd.getpwnam(USER)
    return entry.pw_uid, entry.pw_gid


@pytest.fixture(scope="module")
def installed() -> Iterator[Installed]:
    prefix = Path(tempfile.mkdtemp(prefix="forge-install-", dir="/var/tmp"))
    base = Path(tempfile.mkdtemp(prefix="forge-e2e-", dir="/var/tmp"))
    try:
        done = subprocess.run(
            [str(ROOT / "deploy" / "install.sh"), str(prefix)],
            capture_output=True,
            text=True,
            timeout=900,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        uid, gid = _user()
        base.chmod(0o755)
        for own in (base / "home", base / "workspaces"):
            own.mkdir(mode=0o700)
            os.chown(own, uid, gid)
        yield Installed(prefix, base, uid, gid)
    finally:
        shutil.rmtree(prefix, ignore_errors=True)
        shutil.rmtree(base, ignore_errors=True)


def test_the_prefix_is_readable_by_all_and_writable_by_root_alone(installed) -> None:
    for path in (installed.prefix, *installed.prefix.rglob("*")):
        st = path.lstat()
        if path.is_symlink():
            continue
        assert st.st_uid == 0 and not st.st_mode & 0o022, f"{path} is writable by others"
        assert st.st_mode & 0o004, f"{path} is not readable by others"
    assert (installed.prefix / "venv" / "bin" / "forge-sandbox-launcher").is_file()
    assert json.loads((installed.prefix / "runtime" / "forge-runtime.json").read_text())["digest"]


def test_installing_again_changes_nothing_it_needs_not(installed) -> None:
    launcher = installed.prefix / "venv" / "bin" / "forge-sandbox-launcher"
    manifest = (installed.prefix / "runtime" / "forge-runtime.json").stat()
    done = subprocess.run(
        [str(ROOT / "deploy" / "install.sh"), str(installed.prefix)],
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "installing uv" not in done.stdout  # uv at its pinned version is kept
    assert (installed.prefix / "runtime" / "forge-runtime.json").stat().st_ino == manifest.st_ino
    assert launcher.is_file()


def test_a_relative_prefix_is_refused_with_one_line() -> None:
    done = subprocess.run(
        [str(ROOT / "deploy" / "install.sh"), "relative/prefix"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and "an absolute path" in done.stderr


async def test_the_installed_worker_runs_a_sandboxed_step_as_its_own_user(
    installed, temporal_env, task_queue
) -> None:
    address = temporal_env.client.service_client.config.target_host
    env = installed.env(FORGE_TEMPORAL_ADDRESS=address, FORGE_TASK_QUEUE=task_queue)
    plan_file = installed.base / "plan.json"
    plan_file.write_text(json.dumps(plan(code_step("who", WHO, ["output/who.json"]))))
    plan_file.chmod(0o644)
    log = installed.base / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            installed.argv(env, "worker"),
            cwd=installed.base,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = await asyncio.to_thread(
            subprocess.run,
            installed.argv(env, "run", str(plan_file), "--detach"),
            cwd=installed.base,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        assert started.returncode == 0, started.stdout + started.stderr
        found = re.search(r"started (\S+) on task queue", started.stdout)
        assert found, started.stdout
        run_id = found.group(1)
        client = await forge_client(temporal_env)
        result = await _result_while_alive(
            client.get_workflow_handle(run_id, result_type=RunResult), worker, log
        )
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGINT)
            try:
                worker.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(worker.pid, signal.SIGKILL)
                worker.wait()
    assert result.status == "completed", log.read_text()[-3000:]
    home = installed.base / "home"
    events = open_event_store(f"sqlite:///{home / 'forge.db'}")
    try:
        types = [e.type for e in events.list_events(run_id=run_id)]
        [published] = events.list_published(run_id)
    finally:
        events.close()
    # The platform verified the step's output against its contract and published it.
    assert "step.completed.v1" in types and "run.completed.v1" in types
    assert published.path == "output/who.json" and published.step_key == "who"
    artifacts = open_artifact_store(f"file://{home / 'artifacts'}")
    data = artifacts.read_bytes(Scope.default(), published.sha256, 4096)
    assert f"sha256:{hashlib.sha256(data).hexdigest()}" == published.sha256
    who = json.loads(data)
    # The worker's own uid, inside a user namespace: not root, not the root worker's drop user.
    # FORGE_STEP_RUNTIME reached the step: its python is the prefix's runtime, not the default.
    runtime = str(installed.prefix / "runtime")
    assert who == {"uid": installed.uid, "gid": installed.gid, "runtime": runtime}
    assert who["uid"] != 0
    try:
        assert who["uid"] != pwd.getpwnam(SANDBOX_USER).pw_uid
    except KeyError:
        pass  # no forge-sandbox user on this host: nothing else it could have been


async def _result_while_alive(
    handle: WorkflowHandle, worker: subprocess.Popen[bytes], log: Path
) -> RunResult:
    """The run's result; fails at once, with what it said, if the worker exits first."""
    waiting = asyncio.ensure_future(handle.result())
    for _ in range(RUN_WAIT_S):
        await asyncio.wait({waiting}, timeout=1)
        if waiting.done():
            result = waiting.result()
            assert isinstance(result, RunResult)
            return result
        if worker.poll() is not None:
            break
    waiting.cancel()
    state = "exited" if worker.poll() is not None else "is still running"
    pytest.fail(f"the run did not end and the worker {state}; it said: {log.read_text()[-3000:]}")


def test_the_worker_refuses_to_start_without_its_step_runtime(installed) -> None:
    missing = installed.base / "no-runtime"
    argv = installed.argv(installed.env(FORGE_STEP_RUNTIME=str(missing)), "worker")
    line = _refused_start(argv, installed.base)
    assert "SANDBOX_UNAVAILABLE" in line and str(missing / "forge-runtime.json") in line
    assert "FORGE_STEP_RUNTIME" in line and DOCS in line


def test_the_worker_refuses_to_start_where_no_user_namespace_can_be_made(installed) -> None:
    # A user namespace whose max_user_namespaces allows only the one that makes us the
    # unprivileged user: bubblewrap's own namespace is then refused (ENOSPC), as on a host
    # or container that denies them.
    # Only root's files show as ours in there: a home and workspaces of our own, made there.
    home = str(installed.base / "denied-home")
    env = installed.env(
        FORGE_WORKSPACE_ROOT=str(installed.base / "denied-workspaces"), HOME=home, FORGE_HOME=home
    )
    pairs = [f"{k}={v}" for k, v in env.items()]
    inner = ["unshare", "--user", f"--map-user={installed.uid}", f"--map-group={installed.gid}"]
    script = 'echo 1 > /proc/sys/user/max_user_namespaces && exec "$@"'
    argv = ["unshare", "--user", "--map-root-user", "sh", "-c", script, "sh", *inner]
    line = _refused_start([*argv, "env", "-i", *pairs, installed.forge, "worker"], installed.base)
    assert "SANDBOX_UNAVAILABLE" in line and "sandbox check failed" in line
    assert "namespace" in line and DOCS in line


def _refused_start(argv: list[str], cwd: Path) -> str:
    """The one line a worker started with argv refused to start with (exit 2, never polling)."""
    done = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 2, done.stdout + done.stderr
    [line] = done.stderr.strip().splitlines()
    assert "worker polling" not in done.stdout
    return line
