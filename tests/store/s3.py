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


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real S3-speaking HTTP server (moto) on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # A separate moto server process (as `forge dev up --s3` starts it), as production talks
    # to S3 over the network.
    proc = subprocess.Popen(
        locals3.argv(port),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                if proc.poll() is not None:
                    raise RuntimeError(f"moto_server exited with {proc.returncode}") from None
                time.sleep(0.05)
        else:
            raise RuntimeError("moto_server did not start listening within 15 s")
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def new_s3_store(endpoint: str) -> S3ArtifactStore:
    """An artifact store on a fresh bucket of the test server (one per test: nothing shared)."""
    client = s3_client(endpoint, **CREDENTIALS)
    bucket = f"forge-{uuid.uuid4().hex[:16]}"
    client.create_bucket(Bucket=bucket)
    return S3ArtifactStore(bucket, "runs/", client=client)
