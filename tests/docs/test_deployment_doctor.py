"""The `forge doctor` output each deployment walkthrough shows is what doctor prints there.

docs/deploy-compose.md, deploy-cloud.md and deploy-kubernetes.md each show doctor's output for
their deployment. Here doctor runs with that deployment's variables (the compose worker's env
file, the Cloud page's Temporal settings through a TLS + API-key proxy, the doctor Job's
ConfigMap and Secret) against the topology as processes, and every line a page shows must be in
what it printed, in order (tests/docs/deployment_doctor.py: how places are named back).
"""

from __future__ import annotations

import os
import secrets
import subprocess
from pathlib import Path

import grpc
import pytest

from tests.deploy import compose, kubernetes
from tests.docs.deployment_doctor import Deployment, doctor_block, on_topology, settings_block
from tests.docs.shown import ROOT, Shown, missing_lines
from tests.support.temporal_proxies import grpc_proxy
from tests.support.tls import make_certificates
from tests.support.topology import RunningTopology, dev_topology, forge
from workers.process.devserver import find_binary

COMPOSE_PAGE = ROOT / "docs" / "deploy-compose.md"
CLOUD_PAGE = ROOT / "docs" / "deploy-cloud.md"
KUBERNETES_PAGE = ROOT / "docs" / "deploy-kubernetes.md"
_SETUP_NAMESPACE = ROOT / "deploy" / "temporal" / "setup-namespace.sh"


@pytest.mark.timeout(1200)  # a topology with PostgreSQL, then doctor three times
def test_each_walkthrough_shows_what_doctor_prints(tmp_path: Path) -> None:
    # One test, so one topology serves the three (xdist would give each test its own).
    with dev_topology("--workers", "1", "--postgres", "--s3", "--api") as topology:
        _compose_doctor(topology)
        _kubernetes_doctor(topology)
        _cloud_doctor(topology, tmp_path)


def _worker_env() -> dict[str, str]:
    """What docker-compose.yml's worker container gets from deploy/forge.env."""
    worker = compose.forge_services(compose.load())["worker"]
    return compose.container_env(worker, compose.read_env())


def _doctor(deployment: Deployment, **extra: str) -> str:
    done = forge(deployment.env | extra, "doctor")
    assert done.returncode == 0, done.stdout + done.stderr  # every check holds, as shown
    return deployment.named_back(done.stdout)


def _assert_shows(shown: Shown, printed: str) -> None:
    missing = missing_lines(shown.output, printed)
    assert not missing, (
        f"{shown.source}: `{shown.command}` does not print these shown lines:\n"
        + "\n".join(missing)
        + "\n--- it prints (places named as the deployment names them):\n"
        + printed
    )


def _compose_doctor(topology: RunningTopology) -> None:
    shown = doctor_block(COMPOSE_PAGE, "run --rm worker forge doctor")
    printed = _doctor(on_topology(_worker_env(), topology.env))
    _assert_shows(shown, printed)
    assert "temporal:7233" in printed  # named back: the comparison is on the compose names


def _kubernetes_doctor(topology: RunningTopology) -> None:
    shown = doctor_block(KUBERNETES_PAGE, "logs job/forge-doctor")
    [job] = [c for w, c in kubernetes.containers() if w == "forge-doctor"]
    assert job["command"] == ["forge", "doctor"]
    own = kubernetes.container_env(job)
    assert own["FORGE_DEPLOYMENT_NAME"] and own["FORGE_BUILD_ID"]  # as a worker pod has them
    _assert_shows(shown, _doctor(on_topology(own, topology.env)))


def _cloud_doctor(topology: RunningTopology, tmp_path: Path) -> None:
    shown = doctor_block(CLOUD_PAGE, "forge doctor")
    cloud = settings_block(CLOUD_PAGE, "FORGE_TEMPORAL_API_KEY")
    assert "CHANGE-ME" in cloud["FORGE_TEMPORAL_API_KEY"], "the page shows a real API key"
    _prepare_namespace(topology.env["FORGE_TEMPORAL_ADDRESS"], cloud["FORGE_NAMESPACE"])
    certs = make_certificates(tmp_path, ["localhost"])
    tls = grpc.ssl_server_credentials(
        [(certs.server_key.read_bytes(), certs.server_cert.read_bytes())]
    )
    key = secrets.token_hex(16)
    with grpc_proxy(topology.env["FORGE_TEMPORAL_ADDRESS"], key, tls) as proxy:
        # The proxy's certificate is for localhost, signed by a CA this test made: the system's
        # trust store for this run (SSL_CERT_FILE), as Cloud's CA is for a real deployment.
        edge = f"localhost:{proxy.address.rsplit(':', 1)[1]}"
        deployment = on_topology(
            _worker_env() | cloud, topology.env | {"FORGE_TEMPORAL_ADDRESS": edge}
        )
        printed = _doctor(
            deployment, FORGE_TEMPORAL_API_KEY=key, SSL_CERT_FILE=str(certs.ca_file(tmp_path))
        )
    assert proxy.calls, "doctor never went through the TLS + API-key proxy"
    assert all(md.get("authorization") == f"Bearer {key}" for _, md in proxy.calls)
    assert key not in printed
    _assert_shows(shown, printed)


def _prepare_namespace(address: str, namespace: str) -> None:
    """The namespace with ForgeTenant, by the compose stack's one-shot (Cloud: tcld, as shown)."""
    env = {
        "PATH": f"{find_binary().parent}{os.pathsep}{os.environ['PATH']}",
        "HOME": os.environ.get("HOME", "/nonexistent"),
        "TEMPORAL_ADDRESS": address,
        "FORGE_NAMESPACE": namespace,
    }
    done = subprocess.run(
        ["sh", str(_SETUP_NAMESPACE)],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
