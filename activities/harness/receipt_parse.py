"""Parse checks and summaries per parse validator: one pass over an open file, streamed if able."""

from __future__ import annotations

import codecs
import csv
import io
import json
import lzma
import re
import zipfile
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import yaml

from activities.harness.receipt_html import HtmlScan
from activities.harness.receipt_schema import ColumnStats, summarize_document, value_type

MiB = 1 << 20
CHUNK = 4 * MiB
MAX_ERROR_CHARS = 300
MAX_LINE = MiB


# The parse-limit rule: CSV, TSV, HTML, Markdown, text and diffs are streamed at any size, and
# PDF, ZIP and Parquet are checked by structure; JSON, JSON rows and YAML are only reported
# valid after a full parse, so above `max_parse_bytes` they are ok=False ("larger than the
# parse limit"), never waved through unparsed.
@dataclass(frozen=True)
class Limits:
    max_parse_bytes: int = 64 * MiB
    max_rows: int = 100_000


@dataclass
class Inspection:
    """What one pass over a file found: the verdict, a summary and what contract checks need."""

    ok: bool
    error: str | None = None
    summary: dict[str, Any] = field(default_factory=dict)
    # "object", "array" or "table" (or a scalar's type name); None when the format has none.
    top_level: str | None = None
    document: Any = None  # the parsed JSON/YAML value, kept for contract checks
    columns: list[str] | None = None  # a CSV/TSV header
    data_rows: int | None = None  # rows of a table-shaped document


def _fail(message: str) -> Inspection:
    line = " ".join(message.split())  # errors are one line
    if len(line) > MAX_ERROR_CHARS:
        line = line[: MAX_ERROR_CHARS - 1] + "…"
    return Inspection(ok=False, error=line)


def _too_large(size: int, limits: Limits, what: str) -> Inspection:
    return _fail(
        f"larger than the parse limit ({size} bytes > {limits.max_parse_bytes}); "
        f"{what} is only reported valid after a full parse"
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"non-standard JSON constant {name}")


def _load_json(f: BinaryIO, size: int, limits: Limits) -> Inspection:
    if size > limits.max_parse_bytes:
        return _too_large(size, limits, "JSON")
    raw = f.read()
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fail(f"not valid UTF-8 at byte {exc.start}")
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:  # before ValueError, its base class
        return _fail(f"invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}")
    except ValueError as exc:
        return _fail(str(exc))
    except RecursionError:
        return _fail("invalid JSON: nested too deeply to parse")
    return _document(doc, limits)


def _document(doc: Any, limits: Limits) -> Inspection:
    top = "object" if isinstance(doc, dict) else "array" if isinstance(doc, list) else None
    return Inspection(
        ok=True,
        summary=summarize_document(doc, max_rows=limits.max_rows),
        top_level=top or value_type(doc),
        document=doc,
        data_rows=len(doc) if isinstance(doc, list) else None,
    )


def _inspect_json_rows(f: BinaryIO, size: int, limits: Limits) -> Inspection:
    found = _load_json(f, size, limits)
    if not found.ok:
        return found
    doc = found.document
    if not isinstance(doc, list):
        return _fail(f"top level is {found.top_level}; JSON rows need an array of objects")
    for i, row in enumerate(doc, 1):
        if not isinstance(row, dict):
            return _fail(f"row {i} is {value_type(row)}, not an object")
        for key, value in row.items():
            if isinstance(value, dict | list):
                return _fail(f"row {i}, key {key!r}: nested {value_type(value)}; rows are flat")
    return found


def _inspect_yaml(f: BinaryIO, size: int, limits: Limits) -> Inspection:
    if size > limits.max_parse_bytes:
        return _too_large(size, limits, "YAML")
    try:
        text = f.read().decode("utf-8")
    except UnicodeDecodeError as exc:
        return _fail(f"not valid UTF-8 at byte {exc.start}")
    try:
        doc = yaml.safe_load(text)  # raises ComposerError on a second document
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        return _fail(f"invalid YAML{where}: {exc.problem or exc}")
    except yaml.YAMLError as exc:
        return _fail(f"invalid YAML: {exc}")
    except RecursionError:
        return _fail("invalid YAML: nested too deeply to parse")
    if doc is None:
        return _fail("empty YAML document")
    return _document(doc, limits)


def _inspect_table(f: BinaryIO, delimiter: str, limits: Limits) -> Inspection:
    name = "TSV" if delimiter == "\t" else "CSV"
    # utf-8-sig: spreadsheet exports start with a BOM that must not end up in the first name.
    # Default (minimal) quoting for TSV too: Python's csv module and pandas quote that way.
    text = io.TextIOWrapper(f, encoding="utf-8-sig", newline="")
    reader = csv.reader(text, delimiter=delimiter, strict=True)
    try:
        header = next(reader, None)
        if header is None or not any(cell.strip() for cell in header):
            return _fail(f"no {name} header row")
        if len(set(header)) < len(header):
            dup = next(c for c in header if header.count(c) > 1)
            return _fail(f"duplicate column {dup!r} in the {name} header")
        width, rows = len(header), 0
        stats = ColumnStats(text=True)
        for row in reader:
            if not row:  # a blank line carries no data; writers often leave one at the end
                continue
            rows += 1
            if len(row) != width:
                return _fail(
                    f"row {rows} (line {reader.line_num}) has {len(row)} fields; "
                    f"the header has {width}"
                )
            if rows <= limits.max_rows:
                stats.add(dict(zip(header, row, strict=True)))
    except csv.Error as exc:
        return _fail(f"malformed {name} at line {reader.line_num}: {exc}")
    except UnicodeDecodeError:
        return _fail(f"not valid UTF-8 near line {reader.line_num + 1}")
    finally:
        text.detach()  # the caller owns the binary file
    summary = {"type": "table", "row_count": rows, "rows_sampled": min(rows, limits.max_rows)}
    summary.update(stats.summary())
    return Inspection(ok=True, summary=summary, top_level="table", columns=header, data_rows=rows)


def _decoded_chunks(f: BinaryIO, on_error: Callable[[int], None]) -> Iterator[str]:
    """UTF-8 text in chunks; calls `on_error(byte_offset)` and stops at the first bad byte."""
    decoder = codecs.getincrementaldecoder("utf-8")("strict")
    offset = 0
    while True:
        data = f.read(CHUNK)
        pending = len(decoder.getstate()[0])
        try:
            text = decoder.decode(data, final=not data)
        except UnicodeDecodeError as exc:
            on_error(offset - pending + exc.start)
            return
        offset += len(data)
        if text:
            yield text
        if not data:
            return


class _Utf8Error:
    def __init__(self) -> None:
        self.offset: int | None = None

    def __call__(self, offset: int) -> None:
        self.offset = offset

    def inspection(self) -> Inspection:
        return _fail(f"not valid UTF-8 at byte {self.offset}")


def _inspect_text(f: BinaryIO, *, markdown: bool) -> Inspection:
    bad = _Utf8Error()
    chars = newlines = 0
    last = ""
    blank = True
    for text in _decoded_chunks(f, bad):
        chars += len(text)
        newlines += text.count("\n")
        last = text[-1]
        blank = blank and not text.strip()
    if bad.offset is not None:
        return bad.inspection()
    if markdown and blank:
        return _fail("empty Markdown document")
    lines = newlines + (1 if chars and last != "\n" else 0)
    return Inspection(ok=True, summary={"line_count": lines, "char_count": chars})


def _inspect_html(f: BinaryIO) -> Inspection:
    bad = _Utf8Error()
    scan = HtmlScan()
    for text in _decoded_chunks(f, bad):
        scan.feed(text)
    if bad.offset is not None:
        return bad.inspection()
    scan.close()
    if scan.elements == 0:
        return _fail("no HTML elements")
    title = " ".join("".join(scan.title).split())[:200] or None
    summary = {
        "title": title,
        "element_count": scan.elements,
        "has_script": scan.has_script,
        "external_refs": list(scan.refs),
    }
    return Inspection(ok=True, summary=summary)


# `/Type /Page` but not `/Pages`; whitespace is bounded so a match never spans two chunks.
_PDF_PAGE = re.compile(rb"/Type\s{0,8}/Page(?![A-Za-z])")
_PDF_OVERLAP = 32


def _inspect_pdf(f: BinaryIO, size: int) -> Inspection:
    if f.read(5) != b"%PDF-":
        return _fail("does not start with %PDF-")
    f.seek(max(0, size - 2048))
    if b"%%EOF" not in f.read():
        return _fail("no %%EOF marker near the end")
    f.seek(0)
    pages, carry = 0, b""
    while chunk := f.read(CHUNK):
        buf = carry + chunk
        cut = len(buf) - _PDF_OVERLAP
        pages += sum(1 for m in _PDF_PAGE.finditer(buf) if m.start() < cut)
        carry = buf[max(cut, 0) :]
    pages += len(_PDF_PAGE.findall(carry))
    return Inspection(ok=True, summary={"pages": pages})


_ZIP_ERRORS = (
    zipfile.BadZipFile,
    zipfile.LargeZipFile,
    RuntimeError,  # an encrypted member
    NotImplementedError,  # an unsupported compression method
    EOFError,
    OSError,
    ValueError,
    zlib.error,
    lzma.LZMAError,
)


def _inspect_zip(f: BinaryIO) -> Inspection:
    if not zipfile.is_zipfile(f):
        return _fail("not a ZIP archive")
    f.seek(0)
    try:
        with zipfile.ZipFile(f) as archive:
            bad = archive.testzip()  # reads every member and checks its CRC
            infos = archive.infolist()
    except _ZIP_ERRORS as exc:
        return _fail(f"corrupt ZIP archive: {exc}")
    if bad is not None:
        return _fail(f"corrupt ZIP member {bad!r} (CRC mismatch)")
    summary = {"entries": len(infos), "uncompressed_bytes": sum(i.file_size for i in infos)}
    return Inspection(ok=True, summary=summary)


def _inspect_parquet(f: BinaryIO, size: int) -> Inspection:
    if size < 12:
        return _fail(f"too small for Parquet ({size} bytes)")
    if f.read(4) != b"PAR1":
        return _fail("no PAR1 magic at the start")
    f.seek(size - 8)
    tail = f.read(8)
    if tail[4:] != b"PAR1":
        return _fail("no PAR1 magic at the end")
    footer = int.from_bytes(tail[:4], "little")
    if footer > size - 12:
        return _fail(f"footer length {footer} exceeds the file")
    return Inspection(ok=True, summary={"footer_bytes": footer}, top_level="table")


def _lines(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, each cut at MAX_LINE bytes so one huge line cannot exhaust memory."""
    number = 0
    while line := f.readline(MAX_LINE):
        number += 1
        if len(line) == MAX_LINE and not line.endswith(b"\n"):
            while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
        yield number, line


_HUNK = re.compile(rb"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def _inspect_diff(f: BinaryIO) -> Inspection:  # noqa: C901 - one state machine reads best whole
    old = new = files = hunks = hunk_line = 0
    minus_line = -1
    in_file = False
    for number, line in _lines(f):
        if old > 0 or new > 0:
            mark = line[:1]
            if mark in (b" ", b"\n", b"\r"):  # an empty line: a context line stripped of its space
                old, new = old - 1, new - 1
            elif mark == b"-":
                old -= 1
            elif mark == b"+":
                new -= 1
            elif mark != b"\\":
                return _fail(f"hunk at line {hunk_line} ends early at line {number}")
            if old < 0 or new < 0:
                return _fail(f"hunk at line {hunk_line} has more lines than its header says")
            continue
        if line.startswith(b"--- "):
            minus_line = number
        elif line.startswith(b"+++ "):
            if minus_line != number - 1:
                return _fail(f"'+++' at line {number} without a '---' line before it")
            files, in_file = files + 1, True
        elif line.startswith(b"@@"):
            m = _HUNK.match(line)
            if not in_file:
                return _fail(f"hunk at line {number} before any ---/+++ file header")
            if m is None:
                return _fail(f"malformed hunk header at line {number}")
            old = int(m.group(2)) if m.group(2) is not None else 1
            new = int(m.group(4)) if m.group(4) is not None else 1
            hunks, hunk_line = hunks + 1, number
        elif line.startswith(b"diff "):
            in_file = False
        elif in_file and line[:1] in (b"+", b"-", b" "):
            return _fail(f"line {number} is a change line outside any hunk")
    if old > 0 or new > 0:
        return _fail(f"hunk at line {hunk_line} is truncated")
    if files == 0:
        return _fail("no ---/+++ file header")
    if hunks == 0:
        return _fail("no @@ hunk")
    return Inspection(ok=True, summary={"files": files, "hunks": hunks})


def inspect_file(f: BinaryIO, size: int, validator: str, limits: Limits) -> Inspection:
    """Check and summarize an open binary file (positioned at 0) of `size` bytes."""
    if validator == "json":
        return _load_json(f, size, limits)
    if validator == "json_rows":
        return _inspect_json_rows(f, size, limits)
    if validator == "yaml":
        return _inspect_yaml(f, size, limits)
    if validator in ("csv", "tsv"):
        return _inspect_table(f, "\t" if validator == "tsv" else ",", limits)
    if validator in ("text", "markdown"):
        return _inspect_text(f, markdown=validator == "markdown")
    if validator == "html":
        return _inspect_html(f)
    if validator == "pdf":
        return _inspect_pdf(f, size)
    if validator == "zip":
        return _inspect_zip(f)
    if validator == "parquet":
        return _inspect_parquet(f, size)
    if validator == "unified_diff":
        return _inspect_diff(f)
    if validator == "binary":
        return Inspection(ok=True)
    return _fail(f"unknown parse validator {validator!r}")
