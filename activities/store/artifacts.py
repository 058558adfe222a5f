"""Content-addressed artifact store: blobs named by sha256, on a local filesystem or S3.

Every put and read takes the caller's Scope, and a tenant's blobs live under its own prefix:
`sha256/ab/cdef...` for the default tenant (the layout from before tenants, so blobs already
stored stay where they are) and `tenants/<tenant>/sha256/ab/cdef...` for any other. A read
looks only under its own tenant's prefix, so content is never found across tenants, and a miss
says the same whether another tenant holds the bytes or nobody does. The same bytes put by
two tenants are stored twice: sharing one copy would let a put reveal what another tenant has.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import stat
import tempfile
from abc import ABC, abstractmethod
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from activities.store.errors import (
    ArtifactCorrupt,
    ArtifactNotFound,
    ArtifactTooLarge,
    UnsafeSource,
)
from schemas.artifacts import ArtifactRef
from schemas.scope import DEFAULT_TENANT, Scope

__all__ = [
    "ArtifactCorrupt",
    "ArtifactStore",
    "LocalArtifactStore",
    "copy_hashing",
    "not_found",
    "open_artifact_store",
    "parse_digest",
    "tenant_prefix",
]

CHUNK = 1 << 20
SMALL_FILE = 1 << 20  # local put_file reads a file this small whole, to skip known bytes
_HEX = re.compile(r"[0-9a-f]{64}")


def parse_digest(sha256: str) -> str:
    """The 64 hex digits of `sha256:<hex>` (or of bare hex); ValueError for anything else."""
    digest = sha256.removeprefix("sha256:")
    if _HEX.fullmatch(digest) is None:
        raise ValueError(f"{sha256!r} is not a sha256 digest ('sha256:' + 64 lowercase hex)")
    return digest


def tenant_prefix(scope: Scope) -> str:
    """Where the scope's tenant keeps its blobs: "" for the default tenant, else tenants/<id>/.

    Scope ids hold no "/" and never start with ".", so a prefix names one directory level.
    """
    return "" if scope.tenant == DEFAULT_TENANT else f"tenants/{scope.tenant}/"


class ArtifactStore(ABC):
    """Blobs addressed by the sha256 of their bytes, per tenant; putting them again is a no-op."""

    def put_file(
        self, scope: Scope, path: Path, *, logical_path: str, media_type: str | None = None
    ) -> ArtifactRef:
        """Store a regular file's bytes, streamed and hashed in 1 MiB chunks.

        Raises:
            UnsafeSource: The last path component is a symlink, or the path is not a regular
                file (a FIFO, device or directory a step may have planted).
        """
        with _open_source(path) as src:
            digest, size = self._ingest(scope, src)
        return _ref(digest, size, logical_path, media_type)

    def put_bytes(
        self, scope: Scope, data: bytes, *, logical_path: str, media_type: str | None = None
    ) -> ArtifactRef:
        """Store `data` for the scope's tenant and return its reference."""
        digest, size = self._ingest(scope, io.BytesIO(data))
        return _ref(digest, size, logical_path, media_type)

    def get_to_file(self, scope: Scope, sha256: str, dest: Path, *, durable: bool = True) -> None:
        """Copy a blob to `dest`, verifying its hash on the way.

        The copy goes to a temporary file next to `dest` and is renamed over it only once the
        hash matched, so `dest` is never left holding a partial or corrupt file. `durable=False`
        skips the flush to disk, for copies that live only as long as one step attempt.

        Raises:
            ArtifactNotFound: The scope's tenant holds no blob with this digest.
            ArtifactCorrupt: The stored bytes do not hash to `sha256`.
        """
        digest = parse_digest(sha256)
        fd, tmp_name = tempfile.mkstemp(dir=dest.parent, prefix=f".{dest.name}.", suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out, self._open_blob(scope, digest) as blob:
                hasher = hashlib.sha256()
                while chunk := blob.read(CHUNK):
                    hasher.update(chunk)
                    out.write(chunk)
                _check(digest, hasher.hexdigest())
                if durable:
                    out.flush()
                    os.fsync(out.fileno())
            os.replace(tmp, dest)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def read_bytes(self, scope: Scope, sha256: str, max_bytes: int) -> bytes:
        """A blob's bytes, verified, when it is at most `max_bytes` long.

        Raises:
            ArtifactNotFound: The scope's tenant holds no blob with this digest.
            ArtifactTooLarge: The blob is longer than `max_bytes`.
            ArtifactCorrupt: The stored bytes do not hash to `sha256`.
        """
        digest = parse_digest(sha256)
        with self._open_blob(scope, digest) as blob:
            data = _read_up_to(blob, max_bytes + 1)
        if len(data) > max_bytes:
            raise ArtifactTooLarge(f"artifact sha256:{digest} is larger than {max_bytes} bytes")
        _check(digest, hashlib.sha256(data).hexdigest())
        return data

    @abstractmethod
    def exists(self, scope: Scope, sha256: str) -> bool:
        """Whether the scope's tenant holds a blob with this digest."""

    @abstractmethod
    def _ingest(self, scope: Scope, src: BinaryIO) -> tuple[str, int]:
        """Store the stream's bytes under their digest for the tenant; (hex digest, size)."""

    @abstractmethod
    def _open_blob(self, scope: Scope, digest: str) -> AbstractContextManager[BinaryIO]:
        """The tenant's blob as a byte stream; ArtifactNotFound when the tenant has none."""


class LocalArtifactStore(ArtifactStore):
    """Blobs as read-only files `root/[tenants/<id>/]sha256/ab/cdef...`, renamed into place.

    `durable` (the default) flushes each new blob and its directory entry to disk before the
    put returns, so an OS crash or power loss cannot lose a blob an event already names. The
    embedded default (a SQLite event log, itself flushed at checkpoints, not at every commit)
    opens its store with `durable=False`, the same trade-off: a crash of the process loses
    nothing, and a blob an OS crash tore fails its hash check on every read and is written
    again by the next put of its bytes (a small one is compared first, a streamed one replaced).
    """

    def __init__(self, root: Path, *, durable: bool = True) -> None:
        self.root = root.expanduser().resolve()
        self.durable = durable

    def _blob_path(self, scope: Scope, digest: str) -> Path:
        return self.root / f"{tenant_prefix(scope)}sha256" / digest[:2] / digest[2:]

    def exists(self, scope: Scope, sha256: str) -> bool:
        return self._blob_path(scope, parse_digest(sha256)).is_file()

    def put_bytes(
        self, scope: Scope, data: bytes, *, logical_path: str, media_type: str | None = None
    ) -> ArtifactRef:
        """Store `data`; bytes already stored are not written (nor flushed to disk) again.

        Locally the check is one stat: a step's frozen code, an unchanged receipt or a capsule's
        replayed program costs no write.
        """
        digest = hashlib.sha256(data).hexdigest()
        if self._holds(scope, digest, data):
            return _ref(digest, len(data), logical_path, media_type)
        return super().put_bytes(scope, data, logical_path=logical_path, media_type=media_type)

    def _holds(self, scope: Scope, digest: str, data: bytes) -> bool:
        """Whether the blob is stored intact (a non-durable store checks its bytes: one read)."""
        path = self._blob_path(scope, digest)
        if self.durable:
            return path.is_file()
        try:
            return path.read_bytes() == data
        except OSError:
            return False

    def put_file(
        self, scope: Scope, path: Path, *, logical_path: str, media_type: str | None = None
    ) -> ArtifactRef:
        """As ArtifactStore.put_file; a small file whose bytes are already stored costs no write.

        A step's outputs are often bytes the store already holds (a re-run, a capsule replay):
        up to SMALL_FILE bytes are read whole and hashed first, so they are neither copied nor
        flushed to disk again; a larger file streams through _ingest.
        """
        with _open_source(path) as src:
            head = src.read(SMALL_FILE + 1)
            if len(head) <= SMALL_FILE:
                return self.put_bytes(scope, head, logical_path=logical_path, media_type=media_type)
            src.seek(0)  # _open_source only yields regular files
            digest, size = self._ingest(scope, src)
        return _ref(digest, size, logical_path, media_type)

    def _ingest(self, scope: Scope, src: BinaryIO) -> tuple[str, int]:
        # The name is known only after the last byte, so bytes land in a staging file on the
        # same filesystem first; os.replace from there is atomic.
        staging = self.root / "tmp"
        staging.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(dir=staging, suffix=".part")
        tmp = Path(tmp_name)
        try:
            with os.fdopen(fd, "wb") as out:
                digest, size = copy_hashing(src, out)
                if self.durable:
                    out.flush()
                    os.fsync(out.fileno())
            target = self._blob_path(scope, digest)
            # A durable store's blob is whole once it exists; a non-durable one may be torn
            # (its bytes unknown without a read), so the fresh copy replaces it: no flush.
            if self.durable and target.exists():
                tmp.unlink()
                return digest, size
            new_dirs = self._missing_dirs(target.parent)
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp.chmod(0o444)  # content-addressed blobs never change in place
            os.replace(tmp, target)
            if self.durable:  # the rename itself (and new directories) survive a power loss
                for directory in (target.parent, *(d.parent for d in new_dirs)):
                    _fsync_dir(directory)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
        return digest, size

    def _missing_dirs(self, directory: Path) -> list[Path]:
        """`directory` and its ancestors below the root that do not exist yet, deepest first."""
        missing: list[Path] = []
        while directory != self.root and not directory.is_dir():
            missing.append(directory)
            directory = directory.parent
        return missing

    @contextmanager
    def _open_blob(self, scope: Scope, digest: str) -> Iterator[BinaryIO]:
        path = self._blob_path(scope, digest)
        try:
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
        except FileNotFoundError:
            raise ArtifactNotFound(not_found(scope, digest, str(self.root))) from None
        with os.fdopen(fd, "rb") as blob:
            yield blob


def not_found(scope: Scope, digest: str, store: str) -> str:
    """The ArtifactNotFound message for a tenant's miss in `store`."""
    # Names only the asking tenant: a miss must not say whether another tenant holds the bytes.
    return (
        f"no artifact sha256:{digest} for tenant {scope.tenant!r} in {store}: it was never "
        "stored for this tenant (artifacts are not shared across tenants)"
    )


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def open_artifact_store(
    url: str, *, s3_endpoint: str | None = None, durable: bool = True
) -> ArtifactStore:
    """The store at `url`: `s3://bucket/prefix`, `file:///path`, or a plain directory path.

    `durable` applies to a local store (LocalArtifactStore); S3 is always durable.

    Raises:
        ValueError: The URL has another scheme, or names no bucket.
    """
    parts = urlsplit(url)
    if parts.scheme == "s3":
        # Imported here: boto3 loads only for an S3 store, and that module builds on this one.
        from activities.store.artifacts_s3 import S3ArtifactStore  # noqa: PLC0415

        if not parts.netloc:
            raise ValueError(f"{url!r} names no bucket: use s3://BUCKET/PREFIX")
        return S3ArtifactStore(parts.netloc, parts.path, endpoint_url=s3_endpoint)
    if parts.scheme == "file":
        if parts.netloc not in ("", "localhost"):
            raise ValueError(f"{url!r}: file URLs must be local, e.g. file:///var/lib/forge")
        return LocalArtifactStore(Path(parts.path), durable=durable)
    if parts.scheme == "":
        return LocalArtifactStore(Path(url), durable=durable)
    raise ValueError(f"{url!r}: unsupported artifact store; use a path, file:///PATH or s3://")


@contextmanager
def _open_source(path: Path) -> Iterator[BinaryIO]:
    # O_NONBLOCK keeps a planted FIFO from hanging the open; fstat on the opened descriptor
    # (not the path) decides, so the file cannot be swapped between check and read.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        if os.path.islink(path):
            raise UnsafeSource(f"{path} is a symlink; artifacts are read only from files") from exc
        raise
    try:
        regular = stat.S_ISREG(os.fstat(fd).st_mode)
    except OSError:
        os.close(fd)
        raise
    if not regular:
        os.close(fd)
        raise UnsafeSource(f"{path} is not a regular file")
    with os.fdopen(fd, "rb") as src:
        yield src


def copy_hashing(src: BinaryIO, out: Any) -> tuple[str, int]:
    """Copy `src` to `out` in chunks; the hex sha256 and the size of what was copied."""
    hasher = hashlib.sha256()
    size = 0
    while chunk := src.read(CHUNK):
        hasher.update(chunk)
        out.write(chunk)
        size += len(chunk)
    return hasher.hexdigest(), size


def _read_up_to(src: BinaryIO, limit: int) -> bytes:
    # A network stream may return short reads before its end; loop until limit or EOF.
    parts: list[bytes] = []
    remaining = limit
    while remaining > 0 and (chunk := src.read(min(remaining, CHUNK))):
        parts.append(chunk)
        remaining -= len(chunk)
    return b"".join(parts)


def _check(expected: str, actual: str) -> None:
    if actual != expected:
        raise ArtifactCorrupt(
            f"artifact sha256:{expected} is corrupt: its stored bytes hash to sha256:{actual}"
        )


def _ref(digest: str, size: int, logical_path: str, media_type: str | None) -> ArtifactRef:
    address = f"sha256:{digest}"
    return ArtifactRef(
        artifact_id=address,
        path=logical_path,
        sha256=address,
        size_bytes=size,
        media_type=media_type,
    )
