"""worker.yaml's preStop hook drains a real `forge worker` as the kubelet would run it.

In a container the worker is PID 1 of its own PID namespace, and Kubernetes' SIGTERM would not
drain it (`forge worker` drains on SIGINT). Here the worker runs as PID 1 of a new PID and mount
namespace (`unshare`), the hook's own command runs inside them (`nsenter`, as the kubelet's
exec does), and the worker must stop as on Ctrl-C: "worker stopped", exit 0.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from tests.deploy import kubernetes
from tests.deploy.compose import ROOT

_WAIT_S = 120


def _hook() -> list[str]:
    [worker] = [c for w, c in kubernetes.containers() if w.startswith("forge-worker-")]
    return list(worker["lifecycle"]["preStop"]["exec"]["command"])


def _pid_one(unshare_pid: int) -> int:
    """The process `unshare --fork` started: PID 1 of the new namespace."""
    children = Path(f"/proc/{unshare_pid}/task/{unshare_pid}/children").read_text().split()
    assert len(children) == 1, children
    return int(children[0])


def _wait_for(path: Path, text: str, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _WAIT_S
    while text not in path.read_text(errors="replace"):
        assert proc.poll() is None, f"the worker exited early:\n{path.read_text()}"
        assert time.monotonic() < deadline, f"no {text!r} from the worker:\n{path.read_text()}"
        time.sleep(0.2)


@pytest.mark.skipif(os.geteuid() != 0, reason="a new PID namespace needs root")
def test_the_prestop_hook_drains_a_worker_that_is_pid_1(temporal_env, tmp_path: Path) -> None:
    env = {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "FORGE_HOME": str(tmp_path / "home"),
        "FORGE_TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
        "FORGE_TASK_QUEUE": f"prestop-{uuid.uuid4().hex[:8]}",
    }
    log = tmp_path / "worker.log"
    with log.open("wb") as out:
        worker = subprocess.Popen(
            ["unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "workers.cli"]
            + ["worker"],
            env=env,
            cwd=ROOT,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        _wait_for(log, "worker polling", worker)
        target = _pid_one(worker.pid)
        # The hook ends with its namespace (killed when PID 1 exits), as in a pod.
        subprocess.run(
            ["nsenter", "--target", str(target), "--pid", "--mount", *_hook()],
            env=env,
            cwd=ROOT,
            capture_output=True,
            timeout=_WAIT_S,
            check=False,
        )
        code = worker.wait(timeout=_WAIT_S)
    finally:
        if worker.poll() is None:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait()
    printed = log.read_text(errors="replace")
    assert code == 0, printed
    assert printed.rstrip().endswith("worker stopped"), printed
