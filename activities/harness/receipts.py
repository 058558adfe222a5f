"""Pre- and postflight receipts: what is on disk, hashed, parsed and checked by the platform."""

from __future__ import annotations

import csv
import errno
import hashlib
import io
import json
import os
import re
import stat
from collections.abc import Sequence
from pathlib import Path, PurePosixPath
from typing import Any, Literal

import yaml

from activities.harness.receipt_parse import Inspection, Limits, inspect_file
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import ArtifactContract
from schemas.receipts import FileReceipt, ParseValidation, Receipt

MiB = 1 << 20
HASH_BUFFER = 4 * MiB
DEFAULT_MAX_PARSE_BYTES = 64 * MiB
DEFAULT_MAX_ROWS = 100_000
DEFAULT_MAX_SCAN_BYTES = 8 * MiB

_OPEN_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC
# O_NONBLOCK: a path swapped for a FIFO between lstat and open must not hang the harness.
_FILE_FLAGS = _OPEN_FLAGS | os.O_NONBLOCK
_DIR_FLAGS = _OPEN_FLAGS | os.O_DIRECTORY

# Fallback when no contract names a validator: the longest matching suffix wins.
_BY_EXTENSION: tuple[tuple[str, str, str], ...] = (
    (".rows.json", "table.json_rows", "json_rows"),
    (".evidence.json", "evidence.json_rows", "json_rows"),
    (".json", "object.json", "json"),
    (".yaml", "object.yaml", "yaml"),
    (".yml", "object.yaml", "yaml"),
    (".csv", "table.csv", "csv"),
    (".tsv", "table.tsv", "tsv"),
    (".parquet", "table.parquet", "parquet"),
    (".md", "report.markdown", "markdown"),
    (".markdown", "report.markdown", "markdown"),
    (".html", "report.html", "html"),
    (".htm", "report.html", "html"),
    (".pdf", "report.pdf", "pdf"),
    (".zip", "file.archive.zip", "zip"),
    (".diff", "code.patch.unified_diff", "unified_diff"),
    (".patch", "code.patch.unified_diff", "unified_diff"),
    (".txt", "file.text", "text"),
    (".log", "file.text", "text"),
)

_STRUCTURED = frozenset({"json", "json_rows", "yaml", "csv", "tsv"})
_VALIDATOR_BY_KIND = {kind: validator for _, kind, validator in _BY_EXTENSION}

TEXT_VALIDATORS = frozenset(
    {"json", "json_rows", "csv", "tsv", "yaml", "html", "markdown", "text", "unified_diff"}
)
# Case-sensitive where the lowercase word is ordinary content ("todos", placeholder="...").
_SENTINELS: tuple[tuple[str, re.Pattern[bytes]], ...] = (
    ("TODO", re.compile(rb"\bTODO\b")),
    ("lorem ipsum", re.compile(rb"lorem\s+ipsum", re.IGNORECASE)),
    ("{FILL|", re.compile(re.escape(rb"{FILL|"))),
    ("{FILL_ENUM|", re.compile(re.escape(rb"{FILL_ENUM|"))),
    ("{OPTIONAL|", re.compile(re.escape(rb"{OPTIONAL|"))),
    ("{AUTO|", re.compile(re.escape(rb"{AUTO|"))),
    ("PLACEHOLDER", re.compile(rb"\bPLACEHOLDER\b")),
    ("<insert", re.compile(rb"(?:<|&lt;)insert\b", re.IGNORECASE)),  # HTML escapes the "<"
)


class NotRegularFileError(ForgeError, OSError):
    """The path is a symlink, FIFO, directory or device: its content is never read."""

    code = ErrorCode.NOT_REGULAR_FILE


# -- opening without following links ------------------------------------------------------------


def _describe(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "symbolic link"),
        (stat.S_ISFIFO, "FIFO"),
        (stat.S_ISDIR, "directory"),
        (stat.S_ISSOCK, "socket"),
    )
    return next((name for test, name in kinds if test(mode)), "device")


def _open_in(dir_fd: int, parts: Sequence[str]) -> tuple[io.BufferedReader, int]:
    """Open `parts` below `dir_fd`, refusing a symlink or special file at every component.

    Raises:
        FileNotFoundError: a component is missing (or a file stands where a directory should).
        NotRegularFileError: a component is a symlink, or the file is not a regular file.
    """
    opened: list[int] = []
    try:
        for part in parts[:-1]:
            mode = os.stat(part, dir_fd=dir_fd, follow_symlinks=False).st_mode
            if stat.S_ISLNK(mode):
                raise NotRegularFileError(f"not a regular file ({part!r} is a symbolic link)")
            if not stat.S_ISDIR(mode):
                raise FileNotFoundError(errno.ENOENT, "no such file", part)
            dir_fd = _open_checked(part, _DIR_FLAGS, dir_fd)
            opened.append(dir_fd)
        name = parts[-1]
        before = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
        if not stat.S_ISREG(before.st_mode):
            raise NotRegularFileError(f"not a regular file ({_describe(before.st_mode)})")
        fd = _open_checked(name, _FILE_FLAGS, dir_fd)
        after = os.fstat(fd)
        if (after.st_dev, after.st_ino) != (before.st_dev, before.st_ino):
            os.close(fd)
            raise NotRegularFileError("not a regular file (replaced while being opened)")
        return os.fdopen(fd, "rb"), after.st_size
    finally:
        for fd in opened:
            os.close(fd)


def _open_checked(name: str, flags: int, dir_fd: int) -> int:
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR):  # a symlink swapped in after the lstat
            raise NotRegularFileError(f"not a regular file ({name!r} is a symbolic link)") from exc
        raise


def _open_path(path: Path) -> tuple[io.BufferedReader, int]:
    """Open one path; the final component must be a regular file, not a link to one."""
    parent = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        return _open_in(parent, [path.name])
    finally:
        os.close(parent)


# -- the building blocks -------------------------------------------------------------------------


def _hash_stream(f: io.BufferedReader) -> tuple[str, int]:
    digest = hashlib.sha256()
    buf = bytearray(HASH_BUFFER)  # one reused buffer: no per-chunk allocation
    view = memoryview(buf)
    total = 0
    while n := f.readinto(buf):
        digest.update(view[:n])
        total += n
    return f"sha256:{digest.hexdigest()}", total


def hash_file(path: Path) -> tuple[str, int]:
    """The `sha256:<hex>` digest and byte size of a regular file, streamed in 4 MiB reads.

    Raises:
        NotRegularFileError: `path` is a symlink or not a regular file.
    """
    f, _ = _open_path(path)
    with f:
        return _hash_stream(f)


def _inspect_path(path: Path, validator: str, limits: Limits) -> Inspection:
    try:
        f, size = _open_path(path)
    except FileNotFoundError:
        return Inspection(ok=False, error="file not found")
    except OSError as exc:  # NotRegularFileError included: its message is the error
        return Inspection(ok=False, error=_os_error(exc))
    with f:
        return inspect_file(f, size, validator, limits)


def _os_error(exc: OSError) -> str:
    if isinstance(exc, NotRegularFileError):
        return str(exc)
    return f"cannot read: {exc.strerror or exc}"


def validate_parse(
    path: Path, validator: str, *, max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES
) -> ParseValidation:
    """Whether a file parses as `validator` says, with a one-line error naming where it fails.

    CSV, TSV, HTML, Markdown, text and diffs are streamed at any size; JSON, JSON rows and YAML
    are only valid after a full parse, so above `max_parse_bytes` they are `ok=False`.
    """
    found = _inspect_path(path, validator, Limits(max_parse_bytes, max_rows=0))
    return ParseValidation(ok=found.ok, error=found.error)


def schema_summary(
    path: Path, validator: str, *, max_rows: int = DEFAULT_MAX_ROWS
) -> dict[str, Any]:
    """A small description of the file's shape; `{}` when it does not parse.

    Column types and candidate keys are inferred from the first `max_rows` rows
    (`rows_sampled`); `row_count` counts them all.
    """
    found = _inspect_path(path, validator, Limits(DEFAULT_MAX_PARSE_BYTES, max_rows))
    return found.summary if found.ok else {}


def _empty_structure(validator: str, found: Inspection) -> list[str]:
    if not found.ok:
        return []
    if validator in ("json_rows", "csv", "tsv") and found.data_rows == 0:
        return ["empty rows"]
    if validator in ("json", "yaml") and found.document in ([], {}):
        return ["empty document"]
    return []


def _head_structure(validator: str, head: bytes) -> Inspection:
    """A cheap parse of a file that fits in the scanned head, for the structural checks."""
    try:
        if validator in ("csv", "tsv"):
            delimiter = "\t" if validator == "tsv" else ","
            table = list(csv.reader(io.StringIO(head.decode("utf-8-sig")), delimiter=delimiter))
            return Inspection(ok=bool(table), data_rows=sum(1 for r in table[1:] if r))
        text = head.decode("utf-8")
        doc = yaml.safe_load(text) if validator == "yaml" else json.loads(text)
    except (ValueError, csv.Error, yaml.YAMLError, RecursionError):
        return Inspection(ok=False)  # a parse failure is reported by validate_parse instead
    rows = len(doc) if isinstance(doc, list) else None
    return Inspection(ok=True, document=doc, data_rows=rows)


def _placeholders(
    f: io.BufferedReader, size: int, validator: str, max_scan_bytes: int, found: Inspection | None
) -> list[str]:
    if validator not in TEXT_VALIDATORS:
        return []
    head = f.read(max_scan_bytes)
    hits = [name for name, pattern in _SENTINELS if pattern.search(head)]
    if found is None and len(head) >= size and validator in _STRUCTURED:
        found = _head_structure(validator, head)
    # Emptiness comes from the full parse when there was one, else from the head when it is the
    # whole file; a file larger than the scan window is not an empty document.
    return hits + (_empty_structure(validator, found) if found is not None else [])


def detect_placeholders(
    path: Path, validator: str, *, max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES
) -> list[str]:
    """Placeholder sentinels in the first `max_scan_bytes`, then structural emptiness.

    Only text-like validators are scanned. Names come in a fixed order: TODO, lorem ipsum,
    the template tokens, PLACEHOLDER, <insert, then "empty rows" (JSON rows, CSV, TSV with no
    data row) or "empty document" (an empty JSON/YAML array or object).
    """
    try:
        f, size = _open_path(path)
    except OSError:
        return []  # missing or not a regular file: nothing to scan, validate_parse says why
    with f:
        return _placeholders(f, size, validator, max_scan_bytes, None)


# -- receipts ------------------------------------------------------------------------------------


def _relative_parts(rel: str) -> list[str]:
    parts = [p for p in PurePosixPath(rel).parts if p != "."]
    if not parts or PurePosixPath(rel).is_absolute() or ".." in parts:
        raise ValueError(f"receipt path {rel!r} must be relative and stay inside the workspace")
    return parts


def _kind_and_validator(rel: str, contract: ArtifactContract | None) -> tuple[str, str]:
    name = rel.lower()
    kind, validator = next(
        ((k, v) for suffix, k, v in _BY_EXTENSION if name.endswith(suffix)),
        ("file.binary", "binary"),
    )
    if contract is not None:
        kind = contract.kind_key or kind
        validator = contract.parse_validator or _VALIDATOR_BY_KIND.get(kind, validator)
    return kind, validator


def _contract_violation(
    found: Inspection, validator: str, contract: ArtifactContract
) -> str | None:
    want = contract.required_top_level_type
    doc = found.document
    rows_of_objects = isinstance(doc, list) and all(isinstance(r, dict) for r in doc)
    if want is not None:
        top = found.top_level
        if not (top == want or (want == "table" and top == "array" and rows_of_objects)):
            seen = f"found {top}" if top else f"a {validator} file has no top-level type"
            return f"required top-level type {want!r}: {seen}"
    required = contract.required_columns
    if not required:
        return None
    if found.columns is not None:
        missing = [c for c in required if c not in found.columns]
        return f"missing required columns: {', '.join(missing)}" if missing else None
    if validator == "parquet":
        return "required columns cannot be verified for Parquet (no Parquet reader here)"
    if not (isinstance(doc, list) and rows_of_objects):
        return f"required columns need rows of objects; a {validator} file has none"
    for i, row in enumerate(doc, 1):
        missing = [c for c in required if c not in row]
        if missing:
            return f"row {i} lacks required columns: {', '.join(missing)}"
    return None


def _file_receipt(
    root_fd: int,
    rel: str,
    contract: ArtifactContract | None,
    postflight: bool,
    limits: Limits,
    max_scan_bytes: int,
) -> FileReceipt:
    parts = _relative_parts(rel)
    kind, validator = _kind_and_validator(rel, contract)
    try:
        f, size = _open_in(root_fd, parts)
    except FileNotFoundError:
        return FileReceipt(path=rel, exists=False)
    except OSError as exc:
        refused = ParseValidation(ok=False, error=_os_error(exc))
        return FileReceipt(path=rel, exists=True, kind_key=kind, parse_validation=refused)
    with f:
        sha, size_read = _hash_stream(f)
        f.seek(0)
        found = inspect_file(f, size, validator, limits)
        error: str | None = found.error
        if found.ok and contract is not None:
            error = _contract_violation(found, validator, contract)
        sentinels: list[str] = []
        if postflight:
            f.seek(0)
            sentinels = _placeholders(f, size, validator, max_scan_bytes, found)
    return FileReceipt(
        path=rel,
        exists=True,
        size_bytes=size_read,
        sha256=sha,
        kind_key=kind,
        parse_validation=ParseValidation(ok=error is None, error=error),
        schema_summary=found.summary,
        placeholder_sentinels=sentinels,
    )


def build_receipt(
    workspace: Path,
    files: Sequence[tuple[str, ArtifactContract | None]],
    *,
    step_id: str,
    step_key: str,
    contract_hash: str,
    phase: Literal["preflight", "postflight"],
    max_parse_bytes: int = DEFAULT_MAX_PARSE_BYTES,
    max_rows: int = DEFAULT_MAX_ROWS,
    max_scan_bytes: int = DEFAULT_MAX_SCAN_BYTES,
) -> Receipt:
    """Hash, parse-check and summarize each workspace-relative path; scan outputs (postflight).

    No symlink is followed at any path component, and special files are never opened for
    content. A contract's `required_top_level_type` and `required_columns` are checked and a
    violation makes `parse_validation.ok` false with the reason.

    Raises:
        ValueError: a path is absolute or climbs out of the workspace (a compiler bug).
    """
    limits = Limits(max_parse_bytes, max_rows)
    root_fd = os.open(workspace, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        receipts = [
            _file_receipt(root_fd, rel, contract, phase == "postflight", limits, max_scan_bytes)
            for rel, contract in files
        ]
    finally:
        os.close(root_fd)
    return Receipt(
        step_id=step_id,
        step_key=step_key,
        contract_hash=contract_hash,
        phase=phase,
        files=receipts,
    )


def receipt_summary(receipt: Receipt) -> dict[str, dict[str, Any]]:
    """Per path, the few facts an event payload carries: existence, hash, verdict, placeholders."""
    out: dict[str, dict[str, Any]] = {}
    for f in receipt.files:
        check = f.parse_validation
        entry: dict[str, Any] = {
            "exists": f.exists,
            "size_bytes": f.size_bytes,
            "sha256": f.sha256,
            "ok": check.ok if check is not None else None,
            "error": check.error if check is not None else None,
            "placeholders": list(f.placeholder_sentinels),
        }
        if "row_count" in f.schema_summary:
            entry["rows"] = f.schema_summary["row_count"]
        out[f.path] = entry
    return out
