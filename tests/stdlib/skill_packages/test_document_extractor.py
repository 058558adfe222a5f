"""The document-text-extractor skill package, run in the real sandbox."""

from __future__ import annotations

import hashlib
import io
import re
import zipfile
from pathlib import Path

from pypdf import PdfReader

from schemas.skills import SkillPackage
from tests.stdlib.skill_packages.support import (
    EXTRACT,
    ok,
    put,
    read_json,
    run,
    schema_errors,
)
from tests.support.sandbox import needs_bwrap

# --- document-text-extractor ------------------------------------------------------------------


def pdf_with_pages(texts: list[str]) -> bytes:
    """A minimal PDF: one Helvetica text line per page, with a correct xref table."""
    kids = " ".join(f"{4 + 2 * i} 0 R" for i in range(len(texts)))
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        f"<< /Type /Pages /Kids [{kids}] /Count {len(texts)} >>".encode(),
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    for i, text in enumerate(texts):
        stream = f"BT /F1 18 Tf 72 720 Td ({text}) Tj ET".encode()
        objects.append(
            f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
            f"/Resources << /Font << /F1 3 0 R >> >> /Contents {5 + 2 * i} 0 R >>".encode()
        )
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R /Info << /Title (Supply terms) >> >>\n" % (
        len(objects) + 1
    )
    out += b"startxref\n%d\n%%%%EOF\n" % xref
    return bytes(out)


W = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
DOCUMENT_XML = (
    f'<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document {W}><w:body>'
    "<w:p><w:r><w:t>Between Acme and Globex.</w:t></w:r></w:p>"
    '<w:p><w:pPr><w:pStyle w:val="Heading1"/></w:pPr><w:r><w:t>Scope</w:t></w:r></w:p>'
    '<w:p><w:r><w:t xml:space="preserve">The supplier </w:t></w:r><w:r><w:t>delivers.</w:t></w:r>'
    "<w:r><w:delText>never</w:delText></w:r></w:p>"
    "<w:tbl><w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc>"
    "<w:tc><w:p><w:r><w:t>Price</w:t></w:r></w:p></w:tc></w:tr></w:tbl>"
    '<w:p><w:pPr><w:pStyle w:val="Terms2"/></w:pPr><w:r><w:t>Payment</w:t></w:r></w:p>'
    "<w:p><w:r><w:t>Net 30.</w:t><w:tab/><w:t>No discount.</w:t></w:r></w:p>"
    "</w:body></w:document>"
)
STYLES_XML = (
    f'<w:styles {W}><w:style w:type="paragraph" w:styleId="Terms2">'
    '<w:name w:val="heading 2"/></w:style></w:styles>'
)
CORE_XML = (
    '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/'
    'core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Supply deal'
    "</dc:title><dc:creator>Ann Lee</dc:creator></cp:coreProperties>"
)


def docx(parts: dict[str, str | bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)
    return buffer.getvalue()


@needs_bwrap
def test_pdf_pages_are_extracted_with_metadata(ws: Path, skills: dict[str, SkillPackage]) -> None:
    data = pdf_with_pages(["Hello page one", "Second page (2) text"])
    # The fixture is a real PDF: pypdf reads the text back on the host too.
    assert [p.extract_text() for p in PdfReader(io.BytesIO(data)).pages] == [
        "Hello page one",
        "Second page (2) text",
    ]
    pdf = put(ws, "terms.pdf", data)
    summary = ok(run(ws, EXTRACT, "extract.py", pdf, "--out", "output/terms.json"))
    assert summary["format"] == "pdf" and summary["pages"] == 2
    result = read_json(ws / "output" / "terms.json")
    assert result["pages"] == [
        {"index": 1, "text": "Hello page one"},
        {"index": 2, "text": "Second page (2) text"},
    ]
    assert result["metadata"] == {"page_count": 2, "title": "Supply terms"}
    assert (result["char_count"], result["word_count"]) == (34, 7)
    assert result["sha256"] == hashlib.sha256(data).hexdigest()
    assert result["source"] == "input/terms.pdf" and result["size_bytes"] == len(data)
    assert schema_errors(skills[EXTRACT].output_schema, result) == []


@needs_bwrap
def test_docx_and_html_give_sections_by_heading(ws: Path, skills: dict[str, SkillPackage]) -> None:
    parts = {
        "word/document.xml": DOCUMENT_XML,
        "word/styles.xml": STYLES_XML,
        "docProps/core.xml": CORE_XML,
    }
    word = put(ws, "deal.docx", docx(parts))
    ok(run(ws, EXTRACT, "extract.py", word, "--out", "output/deal.json"))
    result = read_json(ws / "output" / "deal.json")
    assert result["format"] == "docx"
    assert result["metadata"] == {"title": "Supply deal", "author": "Ann Lee"}
    assert result["sections"] == [
        {"index": 1, "heading": None, "level": None, "text": "Between Acme and Globex."},
        {"index": 2, "heading": "Scope", "level": 1, "text": "The supplier delivers.\nItem\tPrice"},
        {"index": 3, "heading": "Payment", "level": 2, "text": "Net 30.\tNo discount."},
    ]
    assert schema_errors(skills[EXTRACT].output_schema, result) == []

    page = put(
        ws,
        "page.htm",
        "<!DOCTYPE html><html lang=en><head><title>Release notes</title>"
        "<style>h1 {color: red}</style><script>document.write('<h1>no</h1>')</script></head>"
        "<body><p>Lead &amp; summary</p><h1>Fixes</h1><p>Faster <b>sync</b>\n  now.</p>"
        "<ul><li>one</li><li>two</li></ul><h2>Known issues</h2>"
        "<table><tr><td>a</td><td>b</td></tr></table></body></html>",
    )
    ok(run(ws, EXTRACT, "extract.py", page, "--out", "output/page.json"))
    result = read_json(ws / "output" / "page.json")
    assert result["format"] == "html"
    assert result["metadata"] == {"lang": "en", "title": "Release notes"}
    assert result["sections"] == [
        {"index": 1, "heading": None, "level": None, "text": "Lead & summary"},
        {"index": 2, "heading": "Fixes", "level": 1, "text": "Faster sync now.\none\ntwo"},
        {"index": 3, "heading": "Known issues", "level": 2, "text": "a\tb"},
    ]
    assert (result["char_count"], result["word_count"]) == (58, 13)
    assert schema_errors(skills[EXTRACT].output_schema, result) == []


@needs_bwrap
def test_a_docx_with_a_doctype_or_a_zip_bomb_is_refused(ws: Path) -> None:
    entity = DOCUMENT_XML.replace(
        "?>\n", '?>\n<!DOCTYPE w:document [<!ENTITY x SYSTEM "file:///etc/passwd">]>\n'
    )
    bad = put(ws, "xxe.docx", docx({"word/document.xml": entity}))
    result = run(ws, EXTRACT, "extract.py", bad, "--out", "output/xxe.json")
    assert result.exit_code == 1 and result.stdout == ""
    assert result.stderr.startswith(
        "extract.py: error: input/xxe.docx: word/document.xml declares a DTD or entities"
    )
    assert not (ws / "output" / "xxe.json").exists()

    bomb = put(
        ws, "bomb.docx", docx({"word/document.xml": DOCUMENT_XML, "pad.bin": b"\0" * 4_000_000})
    )
    result = run(ws, EXTRACT, "extract.py", bomb, "--out", "output/b.json")
    assert result.exit_code == 1
    assert "member pad.bin is compressed 4,000,000 to" in result.stderr
    assert "(over 200:1), the mark of a zip bomb" in result.stderr
    result = run(
        ws,
        EXTRACT,
        "extract.py",
        bomb,
        "--out",
        "output/b.json",
        "--max-uncompressed-bytes",
        "1000000",
    )
    assert re.search(
        r"would expand to 4,00\d,\d{3} bytes, over the 1,000,000-byte limit", result.stderr
    )
    big = put(ws, "big.txt", "x" * 2048)
    result = run(ws, EXTRACT, "extract.py", big, "--out", "output/big.json", "--max-bytes", "1024")
    assert "input/big.txt is 2,048 bytes, over the 1,024-byte limit" in result.stderr
