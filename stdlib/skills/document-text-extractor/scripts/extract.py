#!/usr/bin/env python3
"""Extract the text of a PDF, DOCX, HTML, Markdown or plain-text file into JSON.

    python extract.py INPUT --out OUT.json [--format auto|pdf|docx|html|txt|md]
                      [--max-bytes N] [--max-uncompressed-bytes N] [--max-pages N]

PDFs give one entry per page; the other formats give sections (a heading and its text).
Refused: files over --max-bytes, DOCX archives that would expand past --max-uncompressed-bytes
(or hold a member compressed more than 200:1), XML with a DTD or entity declarations, encrypted
PDFs. Exit 0: written (a JSON summary on stdout); 1: the input cannot be extracted (the reason
on stderr); 2: bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import json
import sys
import zipfile
from pathlib import Path
from typing import Any

sys.dont_write_bytecode = True  # the skill directory is read-only: no __pycache__ beside us
sys.path.insert(0, str(Path(__file__).resolve().parent))
from markup import html_sections, markdown_sections, parse_xml_part, word_sections  # noqa: E402

FORMATS = ("pdf", "docx", "html", "txt", "md")
EXTENSIONS = {
    ".pdf": "pdf",
    ".docx": "docx",
    ".html": "html",
    ".htm": "html",
    ".xhtml": "html",
    ".md": "md",
    ".markdown": "md",
    ".txt": "txt",
    ".text": "txt",
    ".log": "txt",
}
MIB = 1024 * 1024
MAX_MEMBERS = 10_000
MAX_RATIO = 200


class ExtractError(Exception):
    """The input cannot be extracted; the message says why and what to do."""


def detect(path: str, raw: bytes, given: str) -> str:
    """The format: checked against the file's magic bytes, else from its extension or content."""
    is_pdf, is_zip = raw.startswith(b"%PDF-"), raw.startswith(b"PK\x03\x04")
    if given != "auto":
        if (given == "pdf") != is_pdf or (given == "docx") != is_zip:
            actual = "a PDF" if is_pdf else "a ZIP archive" if is_zip else "neither PDF nor ZIP"
            raise ExtractError(
                f"{path} is {actual}, not {given}; pass the right --format or --format auto"
            )
        return given
    if is_pdf:
        return "pdf"
    if is_zip:
        return "docx"
    found = EXTENSIONS.get(Path(path).suffix.lower())
    if found in ("pdf", "docx"):
        raise ExtractError(f"{path} is named {found} but does not start like one; is it damaged?")
    if found:
        return found
    if b"\x00" in raw[:4096] and not raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise ExtractError(
            f"cannot tell the format of {path}: binary content and an unknown extension; "
            f"pass --format ({'|'.join(FORMATS)}) if it is one of those"
        )
    head = raw[:2048].decode("utf-8", errors="replace").lstrip().lower()
    return "html" if head.startswith(("<!doctype html", "<html")) else "txt"


def decode_text(path: str, raw: bytes, warnings: list[str]) -> str:
    if raw.startswith((b"\xff\xfe", b"\xfe\xff")):
        return raw.decode("utf-16", errors="replace")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        warnings.append(
            f"{path} is not UTF-8 (byte {exc.start}); decoded as Windows-1252, so some "
            "characters may be wrong"
        )
        return raw.decode("cp1252", errors="replace")


def clean(text: str) -> str:
    """Unix line ends, no trailing spaces, no NULs, no leading or trailing blank lines."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip("\n")


# --- PDF --------------------------------------------------------------------------------------


def extract_pdf(path: str, raw: bytes, max_pages: int) -> tuple[dict[str, Any], list[dict]]:
    from pypdf import PdfReader
    from pypdf.errors import DependencyError, PyPdfError

    try:
        reader = PdfReader(io.BytesIO(raw))
        if reader.is_encrypted and not reader.decrypt(""):
            raise ExtractError(f"{path} is encrypted with a password; supply a decrypted copy")
        count = len(reader.pages)
        if count > max_pages:
            raise ExtractError(
                f"{path} has {count:,} pages, over the {max_pages:,}-page limit; split it or "
                "raise --max-pages"
            )
        pages = [
            {"index": i, "text": clean(page.extract_text() or "")}
            for i, page in enumerate(reader.pages, start=1)
        ]
        info = reader.metadata or {}
        metadata: dict[str, Any] = {"page_count": count}
        for key, name in (
            ("/Title", "title"),
            ("/Author", "author"),
            ("/Subject", "subject"),
            ("/Creator", "creator"),
            ("/Producer", "producer"),
        ):
            value = info.get(key)
            if isinstance(value, str) and value.strip():
                metadata[name] = value.strip()
    except DependencyError as exc:
        raise ExtractError(f"{path} needs a decryption library the sandbox lacks: {exc}") from None
    except (PyPdfError, ValueError, KeyError, TypeError, IndexError, RecursionError) as exc:
        raise ExtractError(
            f"{path} is not a readable PDF ({type(exc).__name__}: {exc}); if it opens in a "
            "viewer, re-save or print it to a new PDF"
        ) from None
    return metadata, pages


# --- DOCX -------------------------------------------------------------------------------------


def _member(archive: zipfile.ZipFile, name: str, path: str) -> bytes | None:
    try:
        return archive.read(name)
    except KeyError:
        return None
    except (zipfile.BadZipFile, OSError, EOFError) as exc:
        raise ExtractError(f"{path}: member {name} is damaged ({exc})") from None


def extract_docx(path: str, raw: bytes, max_uncompressed: int) -> tuple[dict[str, Any], list[dict]]:
    try:
        archive = zipfile.ZipFile(io.BytesIO(raw))
    except zipfile.BadZipFile as exc:
        raise ExtractError(f"{path} is not a valid ZIP/DOCX archive ({exc})") from None
    infos = archive.infolist()
    if len(infos) > MAX_MEMBERS:
        raise ExtractError(f"{path} has {len(infos):,} archive members (limit {MAX_MEMBERS:,})")
    total = sum(i.file_size for i in infos)
    if total > max_uncompressed:
        raise ExtractError(
            f"{path} would expand to {total:,} bytes, over the {max_uncompressed:,}-byte limit "
            "(a zip bomb, or a very large document: raise --max-uncompressed-bytes if you trust it)"
        )
    for info in infos:
        if info.file_size > MIB and info.file_size > MAX_RATIO * max(info.compress_size, 1):
            raise ExtractError(
                f"{path}: member {info.filename} is compressed {info.file_size:,} to "
                f"{info.compress_size:,} bytes (over {MAX_RATIO}:1), the mark of a zip bomb; "
                "refused"
            )
    document = _member(archive, "word/document.xml", path)
    if document is None:
        raise ExtractError(
            f"{path} is a ZIP archive without word/document.xml, so not a Word document; "
            "pass the .docx itself (not .doc, .odt or .xlsx)"
        )
    parts = {}
    for name in ("word/document.xml", "word/styles.xml", "docProps/core.xml"):
        data = document if name == "word/document.xml" else _member(archive, name, path)
        if data is not None:
            try:
                parts[name] = parse_xml_part(data)
            except ValueError as exc:
                raise ExtractError(f"{path}: {name} {exc}") from None
    try:
        return word_sections(parts)
    except ValueError as exc:
        raise ExtractError(f"{path}: {exc}") from None


# --- driver -----------------------------------------------------------------------------------


def extract(args: argparse.Namespace) -> dict[str, Any]:
    path = args.input
    try:
        size = Path(path).stat().st_size
        if size > args.max_bytes:
            raise ExtractError(
                f"{path} is {size:,} bytes, over the {args.max_bytes:,}-byte limit; split it or "
                "raise --max-bytes"
            )
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise ExtractError(f"cannot read {path}: {exc.strerror}") from None
    fmt = detect(path, raw, args.format)
    warnings: list[str] = []
    units: list[dict[str, Any]]
    if fmt == "pdf":
        metadata, units = extract_pdf(path, raw, args.max_pages)
    elif fmt == "docx":
        metadata, units = extract_docx(path, raw, args.max_uncompressed_bytes)
    else:
        text = decode_text(path, raw, warnings)
        try:
            if fmt == "html":
                metadata, units = html_sections(text)
            elif fmt == "md":
                metadata, units = markdown_sections(text)
            else:
                pages = text.split("\f")
                metadata = {}
                units = [
                    {"index": i, "heading": None, "level": None, "text": clean(t)}
                    for i, t in enumerate(pages, start=1)
                ]
        except ValueError as exc:
            raise ExtractError(f"{path}: {exc}") from None
    for unit in units:
        unit["text"] = clean(unit["text"])
    if not any(u["text"] or u.get("heading") for u in units):
        warnings.append(f"{path}: no text found (a scanned PDF needs OCR first)")
    strings = [u["text"] for u in units] + [u["heading"] for u in units if u.get("heading")]
    return {
        "source": path,
        "format": fmt,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size_bytes": len(raw),
        "metadata": metadata,
        ("pages" if fmt == "pdf" else "sections"): units,
        "char_count": sum(len(s) for s in strings),
        "word_count": sum(len(s.split()) for s in strings),
        "warnings": warnings,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="extract.py", description=__doc__.splitlines()[0])
    parser.add_argument("input", help="the document to read")
    parser.add_argument("--out", required=True, help="the JSON file to write")
    parser.add_argument("--format", choices=("auto", *FORMATS), default="auto")
    parser.add_argument("--max-bytes", type=int, default=50 * MIB, metavar="N")
    parser.add_argument("--max-uncompressed-bytes", type=int, default=200 * MIB, metavar="N")
    parser.add_argument("--max-pages", type=int, default=2000, metavar="N")
    args = parser.parse_args(argv)
    out = Path(args.out)
    try:
        if out.exists() and out.resolve() == Path(args.input).resolve():
            raise ExtractError(f"--out {out} is the input; write the JSON to a new file")
        result = extract(args)
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", "utf-8")
        except OSError as exc:
            raise ExtractError(
                f"cannot write {out}: {exc.strerror}; write under /workspace/output or "
                "/workspace/work (the skill directory is read-only)"
            ) from None
    except ExtractError as exc:
        print(f"extract.py: error: {exc}", file=sys.stderr)
        return 1
    units = "pages" if result["format"] == "pdf" else "sections"
    summary = {
        "out": str(out),
        "format": result["format"],
        units: len(result[units]),
        "char_count": result["char_count"],
        "word_count": result["word_count"],
        "sha256": result["sha256"],
        "warnings": result["warnings"],
    }
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
