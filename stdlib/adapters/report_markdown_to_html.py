"""Adapter: report.markdown -> report.html (a complete, self-contained HTML5 document)."""

from __future__ import annotations

import html
import json
import pathlib
import sys
import xml.etree.ElementTree as ET
from html.parser import HTMLParser
from typing import Any

import markdown
from markdown.treeprocessors import Treeprocessor

# Schemes a browser would execute or render as a document rather than navigate to.
_UNSAFE_SCHEMES = ("javascript:", "vbscript:", "data:", "file:")
_HEADINGS = {"h1", "h2", "h3", "h4", "h5", "h6"}

_CSS = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; line-height: 1.5;
  max-width: 52rem; margin: 2rem auto; padding: 0 1rem; color: #1f2328; }
h1, h2, h3 { line-height: 1.25; }
table { border-collapse: collapse; margin: 1rem 0; }
th, td { border: 1px solid #d0d7de; padding: 0.3rem 0.6rem; text-align: left; }
th { background: #f6f8fa; }
pre { background: #f6f8fa; padding: 0.8rem; overflow-x: auto; }
code { font-family: ui-monospace, "SFMono-Regular", Menlo, monospace; }
""".strip()


class _DropUnsafeTargets(Treeprocessor):
    """Remove href/src values a browser would execute rather than follow."""

    def run(self, root: ET.Element) -> None:
        for element in root.iter():
            for attribute in ("href", "src"):
                target = element.get(attribute)
                if target is not None and _is_unsafe(target):
                    del element.attrib[attribute]


def _is_unsafe(target: str) -> bool:
    # The serializer leaves character references intact and browsers decode them, so
    # "&#106;avascript:" must be checked decoded; browsers also skip whitespace and control
    # characters inside a scheme ("java\tscript:").
    decoded = html.unescape(target)
    compact = "".join(ch for ch in decoded if ch > " ").lower()
    return compact.startswith(_UNSAFE_SCHEMES)


class _Outline(HTMLParser):
    """Read the rendered fragment for the first heading's text and simple counts."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.first_heading: str | None = None
        self.headings = 0
        self.tables = 0
        self._capturing = False
        self._parts: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _HEADINGS:
            self.headings += 1
            self._capturing = self.first_heading is None
        elif tag == "table":
            self.tables += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _HEADINGS and self._capturing:
            self._capturing = False
            self.first_heading = " ".join("".join(self._parts).split()) or None
            self._parts.clear()

    def handle_data(self, data: str) -> None:
        if self._capturing:
            self._parts.append(data)


def render(text: str) -> tuple[str, _Outline]:
    """Render Markdown to an HTML fragment with raw HTML escaped and unsafe links removed."""
    md = markdown.Markdown(extensions=["tables", "fenced_code"], output_format="html")
    # Without these two, raw HTML blocks and inline tags are left as literal text, which the
    # serializer escapes; Python-Markdown documents this as the way to disallow raw HTML.
    md.preprocessors.deregister("html_block")
    md.inlinePatterns.deregister("html")
    # Priority 5 runs after inline parsing (20) has turned text into links and images.
    md.treeprocessors.register(_DropUnsafeTargets(md), "forge_drop_unsafe_targets", 5)
    body = md.convert(text)
    # Headings are read from the final HTML because the tree still holds placeholders for
    # escaped characters and stashed entities at treeprocessor time.
    outline = _Outline()
    outline.feed(body)
    outline.close()
    return body, outline


def transform(src: pathlib.Path, dst: pathlib.Path) -> dict[str, Any]:
    """Convert the Markdown file at src into an HTML document at dst and summarise it."""
    src = pathlib.Path(src)
    body, info = render(src.read_text(encoding="utf-8-sig"))
    title = info.first_heading or src.stem
    document = (
        "<!DOCTYPE html>\n"
        "<html>\n<head>\n"
        '<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>\n{_CSS}\n</style>\n"
        "</head>\n<body>\n"
        f"{body}\n"
        "</body>\n</html>\n"
    )
    pathlib.Path(dst).write_text(document, encoding="utf-8")
    return {
        "title": title,
        "headings": info.headings,
        "tables": info.tables,
        "bytes": len(document.encode("utf-8")),
    }


if __name__ == "__main__":
    if len(sys.argv) < 3:
        sys.exit(f"usage: {pathlib.Path(__file__).name} SRC DST")
    print(json.dumps(transform(pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]))))
