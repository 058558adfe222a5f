"""One contract for the artifact store, run against a local directory and a real S3 server."""

from __future__ import annotations

import abc
import hashlib
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from botocore.exceptions import ClientError

from activities.store.artifacts import ArtifactStore, LocalArtifactStore, open_artifact_store
from activities.store.artifacts_s3 import S3ArtifactStore, s3_client
from activities.store.errors import (
    ArtifactCorrupt,
    ArtifactNotFound,
    ArtifactTooLarge,
    UnsafeSource,
)
from schemas.scope import Scope
from tests.store.s3 import CREDENTIALS, new_s3_store

DATA = b"invoice,amount\nA-1,12.50\n"
DIGEST = "sha256:" + hashlib.sha256(DATA).hexdigest()
SCOPE = Scope.default()  # the layout from before tenants; tests/store/test_artifact_tenancy.py


class ArtifactStoreContract(abc.ABC):
    """Every backend must pass these; subclasses provide `store` and `tamper`."""

    @abc.abstractmethod
    def tamper(self, store: ArtifactStore, sha256: str, data: bytes) -> None:
        """Overwrite the stored blob behind the store's back."""

    def test_put_and_get_round_trip(self, store: ArtifactStore, tmp_path: Path) -> None:
        source = tmp_path / "in.csv"
        source.write_bytes(DATA)
        ref = store.put_file(SCOPE, source, logical_path="input/in.csv", media_type="text/csv")
        assert (ref.artifact_id, ref.sha256, ref.size_bytes) == (DIGEST, DIGEST, len(DATA))
        assert (ref.path, ref.media_type) == ("input/in.csv", "text/csv")
        assert store.exists(SCOPE, DIGEST) and store.exists(SCOPE, DIGEST.removeprefix("sha256:"))
        dest = tmp_path / "out" / "copy.csv"
        dest.parent.mkdir()
        store.get_to_file(SCOPE, ref.sha256, dest)
        assert dest.read_bytes() == DATA
        assert store.read_bytes(SCOPE, DIGEST, 1000) == DATA
        assert sorted(p.name for p in dest.parent.iterdir()) == ["copy.csv"]

    def test_put_bytes_and_empty_content(self, store: ArtifactStore, tmp_path: Path) -> None:
        empty = store.put_bytes(SCOPE, b"", logical_path="meta/empty")
        assert empty.size_bytes == 0
        assert empty.sha256 == "sha256:" + hashlib.sha256(b"").hexdigest()
        assert store.read_bytes(SCOPE, empty.sha256, 0) == b""

    def test_put_is_idempotent(self, store: ArtifactStore, tmp_path: Path) -> None:
        first = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        source = tmp_path / "same.csv"
        source.write_bytes(DATA)
        second = store.put_file(SCOPE, source, logical_path="b.csv")
        assert first.sha256 == second.sha256 and second.path == "b.csv"
        assert store.read_bytes(SCOPE, first.sha256, 1000) == DATA

    def test_missing_artifact(self, store: ArtifactStore, tmp_path: Path) -> None:
        absent = "sha256:" + "0" * 64
        assert not store.exists(SCOPE, absent)
        with pytest.raises(ArtifactNotFound):
            store.get_to_file(SCOPE, absent, tmp_path / "x")
        with pytest.raises(ArtifactNotFound):
            store.read_bytes(SCOPE, absent, 10)
        assert list(tmp_path.iterdir()) == []
        with pytest.raises(ValueError, match="not a sha256 digest"):
            store.exists(SCOPE, "md5:abc")

    def test_read_bytes_enforces_its_limit(self, store: ArtifactStore) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        with pytest.raises(ArtifactTooLarge):
            store.read_bytes(SCOPE, ref.sha256, len(DATA) - 1)
        assert store.read_bytes(SCOPE, ref.sha256, len(DATA)) == DATA

    def test_tampered_blob_is_refused_and_leaves_no_file(
        self, store: ArtifactStore, tmp_path: Path
    ) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        self.tamper(store, ref.sha256, DATA.replace(b"12.50", b"99.99"))
        dest = tmp_path / "copy.csv"
        with pytest.raises(ArtifactCorrupt, match=ref.sha256):
            store.get_to_file(SCOPE, ref.sha256, dest)
        assert list(tmp_path.iterdir()) == []  # neither dest nor a temporary part file
        with pytest.raises(ArtifactCorrupt):
            store.read_bytes(SCOPE, ref.sha256, 1000)

    def test_failed_get_keeps_the_previous_dest(self, store: ArtifactStore, tmp_path: Path) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        self.tamper(store, ref.sha256, b"garbage")
        dest = tmp_path / "copy.csv"
        dest.write_bytes(b"previous")
        with pytest.raises(ArtifactCorrupt):
            store.get_to_file(SCOPE, ref.sha256, dest)
        assert dest.read_bytes() == b"previous"
        assert [p.name for p in tmp_path.iterdir()] == ["copy.csv"]

    def test_refuses_a_symlink_source(self, store: ArtifactStore, tmp_path: Path) -> None:
        secret = tmp_path / "secret"
        secret.write_bytes(b"host secret")
        link = tmp_path / "output.csv"
        link.symlink_to(secret)
        with pytest.raises(UnsafeSource, match="symlink"):
            store.put_file(SCOPE, link, logical_path="output/output.csv")
        assert not store.exists(SCOPE, "sha256:" + hashlib.sha256(b"host secret").hexdigest())

    def test_refuses_non_regular_sources(self, store: ArtifactStore, tmp_path: Path) -> None:
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        with pytest.raises(UnsafeSource, match="not a regular file"):
            store.put_file(SCOPE, fifo, logical_path="output/pipe")  # must not block on the FIFO
        with pytest.raises(UnsafeSource, match="not a regular file"):
            store.put_file(SCOPE, tmp_path, logical_path="output/dir")

    def test_large_file_is_streamed(self, store: ArtifactStore, tmp_path: Path) -> None:
        source = tmp_path / "big.bin"
        expected = hashlib.sha256()
        block = os.urandom(1 << 20)
        with source.open("wb") as out:
            for i in range(50):
                chunk = block[i:] + block[:i]  # 50 distinct MiB without 50 MiB of randomness
                expected.update(chunk)
                out.write(chunk)
        ref = store.put_file(SCOPE, source, logical_path="output/big.bin")
        assert ref.sha256 == "sha256:" + expected.hexdigest()
        assert ref.size_bytes == 50 << 20
        dest = tmp_path / "big.copy"
        store.get_to_file(SCOPE, ref.sha256, dest)
        copied = hashlib.sha256()
        with dest.open("rb") as inp:
            while chunk := inp.read(1 << 20):
                copied.update(chunk)
        assert copied.hexdigest() == expected.hexdigest()
        with pytest.raises(ArtifactTooLarge):
            store.read_bytes(SCOPE, ref.sha256, 1 << 20)


class TestLocal(ArtifactStoreContract):
    @pytest.fixture
    def store(self, tmp_path_factory: pytest.TempPathFactory) -> ArtifactStore:
        return LocalArtifactStore(tmp_path_factory.mktemp("artifacts"))

    def tamper(self, store: ArtifactStore, sha256: str, data: bytes) -> None:
        assert isinstance(store, LocalArtifactStore)
        digest = sha256.removeprefix("sha256:")
        blob = store.root / "sha256" / digest[:2] / digest[2:]
        blob.chmod(0o644)
        blob.write_bytes(data)

    def test_bytes_already_stored_are_not_written_again(
        self, store: ArtifactStore, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        first = store.put_bytes(SCOPE, DATA, logical_path="a.csv")

        def no_write(_scope: object, _src: object) -> tuple[str, int]:
            raise AssertionError("stored bytes were written again")

        monkeypatch.setattr(store, "_ingest", no_write)
        again = store.put_bytes(SCOPE, DATA, logical_path="b.csv", media_type="text/csv")
        assert (again.sha256, again.size_bytes, again.path) == (first.sha256, len(DATA), "b.csv")
        with pytest.raises(AssertionError, match="written again"):
            store.put_bytes(SCOPE, DATA + b"new", logical_path="c.csv")

    def test_a_copy_for_one_attempt_is_verified_without_a_flush_to_disk(
        self, store: ArtifactStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        flushed: list[int] = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd)))
        store.get_to_file(SCOPE, ref.sha256, tmp_path / "work.csv", durable=False)
        assert (tmp_path / "work.csv").read_bytes() == DATA and flushed == []
        store.get_to_file(SCOPE, ref.sha256, tmp_path / "kept.csv")
        assert len(flushed) == 1
        self.tamper(store, ref.sha256, b"tampered")
        with pytest.raises(ArtifactCorrupt):
            store.get_to_file(SCOPE, ref.sha256, tmp_path / "bad.csv", durable=False)
        assert not (tmp_path / "bad.csv").exists()

    def test_a_new_blob_is_flushed_with_its_directory_only_when_durable(
        self, store: ArtifactStore, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        assert isinstance(store, LocalArtifactStore)
        flushed: list[int] = []
        real_fsync = os.fsync
        monkeypatch.setattr(os, "fsync", lambda fd: (flushed.append(fd), real_fsync(fd)))
        store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        # The blob, its new prefix directory, and the new directories above it (sha256/ and
        # the root holding it), so a power loss cannot drop a directory entry a blob needs.
        assert len(flushed) == (4 if store.durable else 0)
        flushed.clear()
        digest = hashlib.sha256(DATA).hexdigest()
        same_prefix = next(
            b
            for n in range(100_000)
            if hashlib.sha256(b := f"{n}".encode()).hexdigest()[:2] == digest[:2]
        )
        store.put_bytes(SCOPE, same_prefix, logical_path="c.csv")  # the prefix directory exists now
        assert len(flushed) == (2 if store.durable else 0)  # the blob, then its directory
        flushed.clear()
        store.put_bytes(SCOPE, DATA, logical_path="b.csv")  # already stored: nothing to flush
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(3 << 20))  # past SMALL_FILE: streamed through _ingest
        prefix = store.root / "sha256" / hashlib.sha256(big.read_bytes()).hexdigest()[:2]
        new_prefix = not prefix.is_dir()
        store.put_file(SCOPE, big, logical_path="big.bin")
        assert len(flushed) == ((3 if new_prefix else 2) if store.durable else 0)

    def test_layout_is_content_addressed_and_read_only(self, store: ArtifactStore) -> None:
        assert isinstance(store, LocalArtifactStore)
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        digest = ref.sha256.removeprefix("sha256:")
        blob = store.root / "sha256" / digest[:2] / digest[2:]
        assert blob.read_bytes() == DATA
        assert blob.stat().st_mode & 0o777 == 0o444
        assert list((store.root / "tmp").iterdir()) == []

    def test_open_artifact_store_urls(self, tmp_path: Path) -> None:
        plain = open_artifact_store(str(tmp_path / "a"))
        assert isinstance(plain, LocalArtifactStore) and plain.root == tmp_path / "a"
        url = open_artifact_store(f"file://{tmp_path / 'b'}")
        assert isinstance(url, LocalArtifactStore) and url.root == tmp_path / "b"
        s3 = open_artifact_store("s3://bucket/some/prefix/", s3_endpoint="http://127.0.0.1:1")
        assert isinstance(s3, S3ArtifactStore)
        assert (s3.bucket, s3.prefix) == ("bucket", "some/prefix")
        with pytest.raises(ValueError, match="unsupported"):
            open_artifact_store("ftp://host/x")
        with pytest.raises(ValueError, match="must be local"):
            open_artifact_store("file://otherhost/x")
        assert plain.durable and not open_artifact_store(str(tmp_path), durable=False).durable


class TestLocalNotDurable(TestLocal):
    """The embedded default's store: nothing flushed; a torn blob is detected and mended."""

    @pytest.fixture
    def store(self, tmp_path_factory: pytest.TempPathFactory) -> ArtifactStore:
        return LocalArtifactStore(tmp_path_factory.mktemp("artifacts"), durable=False)

    def test_a_blob_an_os_crash_tore_is_refused_then_written_again(
        self, store: ArtifactStore, tmp_path: Path
    ) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        self.tamper(store, ref.sha256, DATA[:5])  # what a lost page cache can leave
        with pytest.raises(ArtifactCorrupt):
            store.read_bytes(SCOPE, ref.sha256, 1 << 20)
        again = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        assert again == ref and store.read_bytes(SCOPE, ref.sha256, 1 << 20) == DATA
        # A large file streamed in is written again when the stored blob's size is off.
        big = tmp_path / "big.bin"
        big.write_bytes(os.urandom(3 << 20))
        big_ref = store.put_file(SCOPE, big, logical_path="big.bin")
        for torn in (b"", bytes(big_ref.size_bytes)):  # truncated; zero-filled at full length
            self.tamper(store, big_ref.sha256, torn)
            assert store.put_file(SCOPE, big, logical_path="big.bin") == big_ref
            assert store.read_bytes(SCOPE, big_ref.sha256, 4 << 20) == big.read_bytes()


class TestS3(ArtifactStoreContract):
    @pytest.fixture
    def store(self, moto_endpoint: str) -> S3ArtifactStore:
        return new_s3_store(moto_endpoint)

    def tamper(self, store: ArtifactStore, sha256: str, data: bytes) -> None:
        assert isinstance(store, S3ArtifactStore)
        digest = sha256.removeprefix("sha256:")
        store._client.put_object(Bucket=store.bucket, Key=store._key(SCOPE, digest), Body=data)

    def test_layout(self, store: S3ArtifactStore) -> None:
        ref = store.put_bytes(SCOPE, DATA, logical_path="a.csv")
        digest = ref.sha256.removeprefix("sha256:")
        listed = store._client.list_objects_v2(Bucket=store.bucket)["Contents"]
        assert [o["Key"] for o in listed] == [f"runs/sha256/{digest[:2]}/{digest[2:]}"]


def test_s3_client_does_not_retry() -> None:
    """Temporal owns retries: a failing S3 endpoint sees exactly one request per call."""
    hits: list[str] = []

    class Unavailable(BaseHTTPRequestHandler):
        def _refuse(self) -> None:
            hits.append(self.command)
            self.send_response(503)
            self.send_header("Content-Length", "0")
            self.end_headers()

        do_HEAD = do_GET = do_PUT = _refuse

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Unavailable)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        endpoint = f"http://127.0.0.1:{server.server_address[1]}"
        store = S3ArtifactStore("bucket", client=s3_client(endpoint, **CREDENTIALS))
        with pytest.raises(ClientError):
            store.exists(SCOPE, DIGEST)
        with pytest.raises(ClientError):
            store.read_bytes(SCOPE, DIGEST, 10)
        assert hits == ["HEAD", "GET"]
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
