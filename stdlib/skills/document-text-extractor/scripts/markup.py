"""Sections from markup for extract.py: WordprocessingML (DOCX), HTML and Markdown.

A section is {index, heading, level, text}: the text under one heading, up to the next. Text
before the first heading is a section whose heading is null.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
CORE = {
    "title": "{http://purl.org/dc/elements/1.1/}title",
    "author": "{http://purl.org/dc/elements/1.1/}creator",
    "subject": "{http://purl.org/dc/elements/1.1/}subject",
    "created": "{http://purl.org/dc/terms/}created",
    "modified": "{http://purl.org/dc/terms/}modified",
}
_DECLARATION = re.compile(r"<!\s*(DOCTYPE|ENTITY)", re.I)
_HEADING_NAME = re.compile(r"heading\s*([1-9])", re.I)
SKIP_HTML = frozenset({"script", "style", "noscript", "template", "svg", "math", "iframe"})
BLOCK_HTML = frozenset(
    {
        "p",
        "div",
        "br",
        "li",
        "tr",
        "section",
        "article",
        "header",
        "footer",
        "blockquote",
        "pre",
        "table",
        "ul",
        "ol",
        "dl",
        "dd",
        "dt",
        "hr",
        "main",
        "nav",
        "aside",
        "figure",
        "figcaption",
        "address",
        "caption",
        "form",
        "fieldset",
        "details",
        "summary",
    }
)
HEADINGS = {f"h{n}": n for n in range(1, 7)}


class _Sections:
    """Accumulates sections as headings and lines arrive."""

    def __init__(self) -> None:
        self.done: list[dict[str, Any]] = []
        self.heading: str | None = None
        self.level: int | None = None
        self.lines: list[str] = []

    def start(self, heading: str, level: int) -> None:
        self.flush()
        self.heading, self.level = heading, level

    def flush(self) -> None:
        text = "\n".join(line for line in (x.strip() for x in self.lines) if line)
        if self.heading is not None or text:
            self.done.append(
                {
                    "index": len(self.done) + 1,
                    "heading": self.heading,
                    "level": self.level,
                    "text": text,
                }
            )
        self.heading, self.level, self.lines = None, None, []


# --- XML / DOCX -------------------------------------------------------------------------------


def parse_xml_part(data: bytes) -> ET.Element:
    """Parse one XML part, refusing any DTD or entity declaration (XML bombs, XXE)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        text = data.decode("utf-16", errors="replace")
    else:
        text = data.decode("utf-8", errors="replace")
    if _DECLARATION.search(text):
        raise ValueError(
            "declares a DTD or entities (<!DOCTYPE>/<!ENTITY>); refused, as that is how XML "
            "bombs and external-entity attacks work. Re-save the document from Word"
        )
    if not text.lstrip("\ufeff \t\r\n").startswith("<"):
        raise ValueError("is not XML in UTF-8 or UTF-16; re-save the document from Word")
    try:
        return ET.fromstring(data)
    except ET.ParseError as exc:
        line, column = exc.position
        raise ValueError(f"is not well-formed XML (line {line}, column {column})") from None


def _style_levels(styles: ET.Element | None) -> dict[str, int]:
    """styleId -> heading level, from word/styles.xml names ("heading 2", "Title")."""
    levels: dict[str, int] = {}
    for style in styles.iter(W + "style") if styles is not None else []:
        sid = style.get(W + "styleId") or ""
        name_el = style.find(W + "name")
        name = (name_el.get(W + "val") if name_el is not None else None) or sid
        m = _HEADING_NAME.fullmatch(name.strip())
        if m:
            levels[sid] = int(m.group(1))
        elif name.strip().lower() == "title":
            levels[sid] = 0
    return levels


def _paragraph_text(p: ET.Element) -> str:
    out = []
    for el in p.iter():
        if el.tag == W + "t":
            out.append(el.text or "")
        elif el.tag == W + "tab":
            out.append("\t")
        elif el.tag in (W + "br", W + "cr"):
            out.append("\n")
    return "".join(out)


def _paragraph_level(p: ET.Element, levels: dict[str, int]) -> int | None:
    ppr = p.find(W + "pPr")
    if ppr is None:
        return None
    style = ppr.find(W + "pStyle")
    sid = style.get(W + "val") if style is not None else None
    if sid is not None:
        if sid in levels:
            return levels[sid]
        m = re.fullmatch(r"(?i)heading([1-9])", sid)
        if m:
            return int(m.group(1))
        if sid.lower() == "title":
            return 0
    outline = ppr.find(W + "outlineLvl")
    if outline is not None and (outline.get(W + "val") or "").isdigit():
        value = int(outline.get(W + "val") or "0")
        return value + 1 if value < 9 else None
    return None


def _blocks(parent: ET.Element, levels: dict[str, int], acc: _Sections) -> None:
    for child in parent:
        if child.tag == W + "p":
            text = _paragraph_text(child)
            level = _paragraph_level(child, levels)
            if level is not None and text.strip():
                acc.start(" ".join(text.split()), level)
            else:
                acc.lines.extend(text.split("\n"))
        elif child.tag == W + "tbl":
            for row in child.findall(W + "tr"):
                cells = [
                    " ".join(_paragraph_text(p).strip() for p in cell.iter(W + "p")).strip()
                    for cell in row.findall(W + "tc")
                ]
                acc.lines.append("\t".join(cells))
        elif child.tag in (W + "sdt", W + "sdtContent", W + "customXml", W + "smartTag"):
            _blocks(child, levels, acc)


def word_sections(parts: dict[str, ET.Element]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    body = parts["word/document.xml"].find(W + "body")
    if body is None:
        raise ValueError("word/document.xml has no w:body; the document is damaged")
    acc = _Sections()
    _blocks(body, _style_levels(parts.get("word/styles.xml")), acc)
    acc.flush()
    metadata: dict[str, Any] = {}
    core = parts.get("docProps/core.xml")
    for name, tag in CORE.items():
        el = core.find(tag) if core is not None else None
        if el is not None and el.text and el.text.strip():
            metadata[name] = el.text.strip()
    return metadata, acc.done


# --- HTML and Markdown ------------------------------------------------------------------------


class _HtmlText(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.acc = _Sections()
        self.metadata: dict[str, Any] = {}
        self._skip = 0
        self._in_head = False
        self._title: list[str] | None = None
        self._heading: tuple[int, list[str]] | None = None
        self._pre = 0
        self._line: list[str] = []

    def _break(self) -> None:
        if self._line:
            self.acc.lines.append("".join(self._line))
            self._line = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if tag in SKIP_HTML:
            self._skip += 1
        elif tag == "html" and values.get("lang"):
            self.metadata["lang"] = values["lang"]
        elif tag == "head":
            self._in_head = True
        elif tag == "body":
            self._in_head = False
        elif tag == "title" and not self._skip:
            self._title = []
        elif tag == "meta" and (values.get("name") or "").lower() == "description":
            if values.get("content"):
                self.metadata["description"] = " ".join((values["content"] or "").split())
        elif tag in HEADINGS and not self._skip:
            self._break()
            self._heading = (HEADINGS[tag], [])
        elif tag in ("td", "th") and self._line:
            self._line.append("\t")
        if tag == "pre":
            self._pre += 1
        if tag in BLOCK_HTML:
            self._break()

    def handle_endtag(self, tag: str) -> None:
        if tag in SKIP_HTML:
            self._skip = max(0, self._skip - 1)
        elif tag == "head":
            self._in_head = False
        elif tag == "title" and self._title is not None:
            self.metadata.setdefault("title", " ".join("".join(self._title).split()))
            self._title = None
        elif tag in HEADINGS and self._heading is not None:
            level, parts = self._heading
            self._heading = None
            text = " ".join("".join(parts).split())
            if text:
                self.acc.start(text, level)
        if tag == "pre":
            self._pre = max(0, self._pre - 1)
        if tag in BLOCK_HTML:
            self._break()

    def handle_data(self, data: str) -> None:
        if self._title is not None:
            self._title.append(data)
            return
        if self._skip or self._in_head:
            return
        if self._heading is not None:
            self._heading[1].append(data)
        elif self._pre:
            lines = data.split("\n")
            self._line.append(lines[0])
            for line in lines[1:]:
                self._break()
                self._line.append(line)
        else:
            self._line.append(re.sub(r"\s+", " ", data))

    def result(self) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        self.close()
        self._break()
        self.acc.flush()
        return self.metadata, self.acc.done


def html_sections(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    parser = _HtmlText()
    parser.feed(text)
    return parser.result()


def markdown_sections(text: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    import markdown

    html = markdown.markdown(text, extensions=["extra"], output_format="html")
    _, sections = html_sections(html)
    return {}, sections
