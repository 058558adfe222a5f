"""The artifact store on S3 (or an S3-compatible server): one bucket, tenants under prefixes."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, BinaryIO

import boto3
from botocore.config import Config
from botocore.exceptions import ClientError

from activities.store.artifacts import (
    CHUNK,
    ArtifactStore,
    copy_hashing,
    not_found,
    parse_digest,
    tenant_prefix,
)
from activities.store.errors import ArtifactNotFound
from schemas.scope import Scope

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

__all__ = ["S3ArtifactStore", "s3_client"]


def s3_client(endpoint_url: str | None = None, **session: Any) -> S3Client:
    """A boto3 S3 client with its own retries off (Temporal retries the activity instead).

    Args:
        endpoint_url: An S3-compatible endpoint (MinIO, a test server); AWS when None.
        **session: Passed to `boto3.session.Session` (credentials, region).
    """
    config = Config(
        # botocore's "max_attempts" counts retries after the first try ({"max_attempts": 1}
        # means two requests); "total_max_attempts" counts requests, so 1 is no retry at all.
        retries={"total_max_attempts": 1, "mode": "standard"},
        # Path-style addressing works for MinIO and IP endpoints, where bucket DNS does not.
        s3={"addressing_style": "path"} if endpoint_url else None,
    )
    return boto3.session.Session(**session).client("s3", endpoint_url=endpoint_url, config=config)


class S3ArtifactStore(ArtifactStore):
    """Blobs as objects `prefix/[tenants/<id>/]sha256/ab/cdef...` in one bucket."""

    def __init__(
        self,
        bucket: str,
        prefix: str = "",
        endpoint_url: str | None = None,
        *,
        client: S3Client | None = None,
    ) -> None:
        self.bucket = bucket
        self.prefix = prefix.strip("/")
        self._client = client if client is not None else s3_client(endpoint_url)

    def _key(self, scope: Scope, digest: str) -> str:
        key = f"{tenant_prefix(scope)}sha256/{digest[:2]}/{digest[2:]}"
        return f"{self.prefix}/{key}" if self.prefix else key

    def exists(self, scope: Scope, sha256: str) -> bool:
        key = self._key(scope, parse_digest(sha256))
        try:
            self._client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _missing(exc):
                return False
            raise
        return True

    def _ingest(self, scope: Scope, src: BinaryIO) -> tuple[str, int]:
        # The key is the digest, known only after the last byte: spool (to disk when large),
        # then upload the spooled copy, so a source changing meanwhile cannot mismatch its key.
        with tempfile.SpooledTemporaryFile(max_size=8 * CHUNK) as spool:
            digest, size = copy_hashing(src, spool)
            if not self.exists(scope, digest):
                spool.seek(0)
                self._client.upload_fileobj(spool, self.bucket, self._key(scope, digest))
        return digest, size

    @contextmanager
    def _open_blob(self, scope: Scope, digest: str) -> Iterator[BinaryIO]:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=self._key(scope, digest))
        except ClientError as exc:
            if _missing(exc):
                where = f"s3://{self.bucket}/{self.prefix}"
                raise ArtifactNotFound(not_found(scope, digest, where)) from None
            raise
        body = response["Body"]
        try:
            yield body  # type: ignore[misc]  # StreamingBody reads like a binary file
        finally:
            body.close()


def _missing(exc: ClientError) -> bool:
    return exc.response.get("Error", {}).get("Code") in ("404", "NoSuchKey", "NotFound")
