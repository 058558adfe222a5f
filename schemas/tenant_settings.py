"""A tenant's settings (issue 20 §2, §3): its quotas and the input locations its runs may read.

A tenant that was never updated has no quota and no input location of its own; the deployment's
FORGE_INPUT_ROOTS and FORGE_INPUT_BUCKETS are the default tenant's (the single-user embedded
setup), never another tenant's.
"""

import re
from pathlib import PurePosixPath

from pydantic import AwareDatetime, Field, field_validator

from schemas.base import FrozenModel
from schemas.scope import ScopeId

__all__ = ["BUCKET_NAME", "InputBucket", "TenantSettings", "input_bucket"]

# S3's rules for a bucket name (the common subset every S3-compatible server accepts).
BUCKET_NAME = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")


class InputBucket(FrozenModel):
    """An S3 location a tenant may read: a whole bucket, or only keys under a prefix."""

    bucket: str
    prefix: str = ""

    def admits(self, bucket: str, key: str) -> bool:
        """Whether s3://bucket/key lies in this location."""
        return bucket == self.bucket and key.startswith(self.prefix)

    def __str__(self) -> str:
        return f"{self.bucket}/{self.prefix}" if self.prefix else self.bucket


def input_bucket(text: str) -> InputBucket:
    """`BUCKET` or `BUCKET/PREFIX/` (an `s3://` in front is allowed) as an InputBucket.

    Raises:
        ValueError: not a valid bucket name, or a prefix with `..` or an empty segment.
    """
    raw = text.removeprefix("s3://")
    bucket, _, prefix = raw.partition("/")
    if not BUCKET_NAME.match(bucket):
        raise ValueError(
            f"{text!r} is not BUCKET or BUCKET/PREFIX/: a bucket name is 3-63 lower-case "
            "letters, digits, '.' and '-'"
        )
    parts = prefix.rstrip("/").split("/") if prefix else []
    if any(p in ("", ".", "..") for p in parts):
        raise ValueError(f"{text!r}: the prefix may not hold '.', '..' or an empty segment")
    return InputBucket(bucket=bucket, prefix=prefix)


class TenantSettings(FrozenModel):
    """What a tenant may run (quotas; None is unlimited) and read (input locations)."""

    tenant_id: ScopeId
    max_concurrent_runs: int | None = Field(default=None, ge=0)
    max_tokens_per_day: int | None = Field(default=None, ge=0)
    input_roots: tuple[str, ...] = ()
    input_buckets: tuple[str, ...] = ()
    updated_at: AwareDatetime | None = None
    updated_by: str | None = None

    @field_validator("input_roots")
    @classmethod
    def _roots_absolute(cls, roots: tuple[str, ...]) -> tuple[str, ...]:
        for root in roots:
            path = PurePosixPath(root)
            if not path.is_absolute() or ".." in path.parts:
                raise ValueError(f"input root {root!r} must be an absolute path without '..'")
        return roots

    @field_validator("input_buckets")
    @classmethod
    def _buckets_valid(cls, buckets: tuple[str, ...]) -> tuple[str, ...]:
        for bucket in buckets:
            input_bucket(bucket)
        return buckets

    @property
    def buckets(self) -> tuple[InputBucket, ...]:
        """The input buckets, parsed."""
        return tuple(input_bucket(b) for b in self.input_buckets)
