"""A local S3 server (moto's) for `forge dev up --s3`: start it, make the bucket, probe it.

moto keeps objects in memory: they last as long as the server, which is what a development
topology needs and nothing more. Its credentials are fixed dummies, not secrets.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

from botocore.exceptions import BotoCoreError, ClientError

from activities.store.artifacts_s3 import s3_client
from workers.process.devserver import TopologyError
from workers.process.procs import HOST

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = [
    "BUCKET",
    "CREDENTIALS",
    "PREFIX",
    "answers",
    "argv",
    "check_installed",
    "create_bucket",
    "endpoint",
]

BUCKET = "forge-artifacts"
PREFIX = "artifacts/"
# The AWS_* variables every process of the topology gets; moto accepts any credentials.
CREDENTIALS = {
    "AWS_ACCESS_KEY_ID": "forge-dev",
    "AWS_SECRET_ACCESS_KEY": "forge-dev-not-a-secret",
    "AWS_DEFAULT_REGION": "us-east-1",
}


def check_installed() -> None:
    """Raise unless this interpreter can run `python -m moto.server`.

    Raises:
        TopologyError: moto (with its server extra) is not installed.
    """
    try:
        import moto.server  # noqa: F401, PLC0415 - only whether it imports matters here
    except ImportError as exc:
        raise TopologyError(
            f"--s3 needs the moto S3 server, which {sys.executable} cannot import "
            f"({exc.name or exc}); install it with `pip install 'moto[server]'` "
            "(or `uv sync --extra dev`) or leave out --s3"
        ) from None


def argv(port: int) -> list[str]:
    """The moto server's command line on loopback `port`."""
    return [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(port)]


def endpoint(port: int) -> str:
    """The server's URL, as FORGE_S3_ENDPOINT names it."""
    return f"http://{HOST}:{port}"


def create_bucket(port: int, log: Path) -> None:
    """Create BUCKET on the server (an existing one is kept).

    Raises:
        TopologyError: The server refused (its log is named).
    """
    client = _client(port)
    try:
        client.create_bucket(Bucket=BUCKET)
    except ClientError as exc:
        if exc.response.get("Error", {}).get("Code") != "BucketAlreadyOwnedByYou":
            raise TopologyError(
                f"the local S3 server at {endpoint(port)} refused to create bucket {BUCKET}: "
                f"{exc}; see {log}"
            ) from None
    except BotoCoreError as exc:
        raise TopologyError(
            f"the local S3 server at {endpoint(port)} did not answer: {exc}; see {log}"
        ) from None


def answers(port: int) -> bool:
    """Whether the server answers and holds BUCKET (a real S3 request)."""
    try:
        _client(port).head_bucket(Bucket=BUCKET)
    except (ClientError, BotoCoreError):
        return False
    return True


def _client(port: int) -> S3Client:
    return s3_client(
        endpoint(port),
        aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"],
        region_name=CREDENTIALS["AWS_DEFAULT_REGION"],
    )
