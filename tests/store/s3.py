"""The S3 test server the artifact store tests share: moto, in a process of its own."""

import socket
import subprocess
import time
import uuid
from collections.abc import Iterator

import pytest

from activities.store.artifacts_s3 import S3ArtifactStore, s3_client
from workers.process import locals3

# Dummy credentials handed to the client directly, so nothing depends on the environment.
CREDENTIALS = {
    "aws_access_key_id": "forge-test",
    "aws_secret_access_key": "forge-test-secret",
    "region_name": "us-east-1",
}


def use_test_credentials(monkeypatch: pytest.MonkeyPatch) -> None:
    """CREDENTIALS in the environment, where Forge's own S3 clients (inputs) read them."""
    for name, value in (
        ("AWS_ACCESS_KEY_ID", CREDENTIALS["aws_access_key_id"]),
        ("AWS_SECRET_ACCESS_KEY", CREDENTIALS["aws_secret_access_key"]),
        ("AWS_DEFAULT_REGION", CREDENTIALS["region_name"]),
    ):
        monkeypatch.setenv(name, value)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _answers_as_s3(endpoint: str) -> bool:
    """Whether the server at endpoint is an S3 server (lists buckets for our credentials)."""
    try:
        s3_client(endpoint, **CREDENTIALS).list_buckets()
    except Exception:  # not up yet, or not moto (another test's server took the port)
        return False
    return True


def _start_moto() -> tuple[subprocess.Popen[bytes], str] | None:
    """A moto server on a free port, once it answers S3; None when it lost the port.

    The port is free when chosen and bound by moto a moment later: another test's server can
    take it in between, and then moto exits and the port answers as something else. Only an
    S3 answer from our own live process counts.
    """
    port = _free_port()
    # A separate moto server process (as `forge dev up --s3` starts it), as production talks
    # to S3 over the network.
    proc = subprocess.Popen(
        locals3.argv(port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(300):
        if proc.poll() is not None:
            return None
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                pass
        except OSError:
            time.sleep(0.05)
            continue
        if proc.poll() is None and _answers_as_s3(endpoint):
            return proc, endpoint
        time.sleep(0.05)
    proc.terminate()
    proc.wait(timeout=10)
    raise RuntimeError("moto_server did not answer S3 requests within 15 s")


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real S3-speaking HTTP server (moto) on a free loopback port."""
    for _ in range(5):
        started = _start_moto()
        if started is not None:
            break
    else:
        raise RuntimeError("moto_server lost its port to another process 5 times in a row")
    proc, endpoint = started
    try:
        yield endpoint
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def new_s3_store(endpoint: str) -> S3ArtifactStore:
    """An artifact store on a fresh bucket of the test server (one per test: nothing shared)."""
    client = s3_client(endpoint, **CREDENTIALS)
    bucket = f"forge-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=bucket)
    return S3ArtifactStore(bucket, "runs/", client=client)
