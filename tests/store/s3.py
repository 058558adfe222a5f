"""The S3 test server the artifact store tests share: moto, in a process of its own."""

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

# Dummy credentials handed to the client directly, so nothing depends on the environment.
CREDENTIALS = {
    "aws_access_key_id": "forge-test",
    "aws_secret_access_key": "forge-test-secret",
    "region_name": "us-east-1",
}


@pytest.fixture(scope="session")
def moto_endpoint() -> Iterator[str]:
    """A real S3-speaking HTTP server (moto) on a free loopback port."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # A separate moto_server process, as production talks to S3 over the network.
    binary = Path(sys.executable).parent / "moto_server"
    proc = subprocess.Popen(
        [str(binary), "-H", "127.0.0.1", "-p", str(port)],
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
