#!/usr/bin/env python3
"""Check a rendered report against the content it was rendered from.

    python validate_report.py REPORT.html --content CONTENT.json [--out SUMMARY.json]

Checks: an HTML5 doctype; one <html>, <head>, <body>; exactly one <title>, equal to the content
title; every content section heading present as an <h2>; one inline <svg> per chart and one
<table> per table; no <script> (or other active or embedding element), no on* event handlers,
no URL outside the document (only #fragments and data: images); no placeholder text (TODO, TBD,
FIXME, lorem ipsum, {{ }}, {% %}, ${ }).

Prints a JSON summary on stdout (and writes it to --out): exit 0 when every check passes, 1 with
the problems listed (each with its check, message and line), 2 on bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

MAX_REPORT_BYTES = 32 * 1024 * 1024
FORBIDDEN = frozenset(
    {"script", "iframe", "frame", "frameset", "object", "embed", "applet", "base", "link", "form"}
)
URL_ATTRIBUTES = frozenset(
    {
        "href",
        "src",
        "srcset",
        "action",
        "formaction",
        "data",
        "poster",
        "background",
        "cite",
        "longdesc",
        "manifest",
        "ping",
        "xlink:href",
        "codebase",
        "archive",
        "usemap",
    }
)
TEXT_ATTRIBUTES = frozenset({"alt", "title", "aria-label", "placeholder"})
PLACEHOLDER = re.compile(
    r"\b(?:TODO|TBD|FIXME|PLACEHOLDER)\b|(?i:lorem\s+ipsum|\blorem\b)|\{\{.*?\}\}|\{%.*?%\}"
    r"|\$\{[^}]*\}",
    re.S,
)
CSS_EXTERNAL = re.compile(r"@import|expression\s*\(|url\(\s*['\"]?(?!data:)", re.I)


def normal(text: str) -> str:
    return " ".join(text.split())


class ReportAudit(HTMLParser):
    """One pass over the document, collecting what the checks need and every problem seen."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.problems: list[dict[str, Any]] = []
        self.titles: list[str] = []
        self.h2: list[str] = []
        self.counts: Counter[str] = Counter()
        self._svg_depth = 0
        self._capture: str | None = None
        self._buffer: list[str] = []
        self._in_style = False

    def problem(self, check: str, message: str) -> None:
        self.problems.append({"check": check, "message": message, "line": self.getpos()[0]})

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.counts[tag] += 1
        if tag == "svg":
            self.counts["chart"] += self._svg_depth == 0
            self._svg_depth += 1
        elif tag == "style":
            self._in_style = True
        elif tag in ("title", "h2") and self._svg_depth == 0:
            self._capture, self._buffer = tag, []
        if tag in FORBIDDEN:
            check = "script" if tag == "script" else "active_content"
            self.problem(
                check,
                f"<{tag}> element: a report may not run or embed anything; remove it "
                "(render_report.py never writes one: re-render from the content)",
            )
        for name, value in attrs:
            self._attribute(tag, name, value or "")

    def _attribute(self, tag: str, name: str, value: str) -> None:
        if name.startswith("on"):
            self.problem("script", f"<{tag} {name}=...> event handler: remove it")
        elif name in URL_ATTRIBUTES:
            target = value.strip()
            if not (target.startswith("#") or target.lower().startswith("data:image/")):
                self.problem(
                    "external_url",
                    f"<{tag} {name}={target[:80]!r}> points outside the document; inline the "
                    "resource or remove the reference",
                )
        elif name == "style" and CSS_EXTERNAL.search(value):
            self.problem(
                "external_url", f"<{tag} style=...> loads an external resource; remove the url()"
            )
        elif tag == "meta" and name == "http-equiv" and value.lower() == "refresh":
            self.problem("active_content", "<meta http-equiv=refresh> redirects the reader")
        if name in TEXT_ATTRIBUTES:
            self._placeholders(value, f"<{tag} {name}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "svg" and self._svg_depth:
            self._svg_depth -= 1
        elif tag == "style":
            self._in_style = False
        elif tag == self._capture:
            text = normal("".join(self._buffer))
            (self.titles if tag == "title" else self.h2).append(text)
            self._capture = None

    def handle_data(self, data: str) -> None:
        if self._in_style:
            found = CSS_EXTERNAL.search(data)
            if found:
                self.problem(
                    "external_url",
                    f"CSS {found.group(0)!r} in <style> loads an external resource; use a "
                    "theme from assets/themes (they are self-contained)",
                )
            return
        if self._capture:
            self._buffer.append(data)
        if data.strip():
            self._placeholders(data, "text")

    def handle_comment(self, data: str) -> None:
        self._placeholders(data, "comment")

    def _placeholders(self, text: str, where: str) -> None:
        for found in PLACEHOLDER.finditer(text):
            self.problem(
                "placeholder",
                f"placeholder {found.group(0)[:40]!r} in {where}: replace it with real content",
            )


def load_content(path: Path) -> tuple[str, list[str], int, int]:
    """(title, headings, charts, tables) of the content; ValueError naming what is wrong."""
    try:
        content = json.loads(path.read_bytes().decode("utf-8-sig"))
    except OSError as exc:
        raise ValueError(f"cannot read content file {path}: {exc.strerror}") from None
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"content file {path} is not UTF-8 JSON: {exc}") from None
    sections = content.get("sections") if isinstance(content, dict) else None
    if (
        not isinstance(content, dict)
        or not isinstance(content.get("title"), str)
        or not isinstance(sections, list)
        or not all(isinstance(s, dict) and isinstance(s.get("heading"), str) for s in sections)
    ):
        raise ValueError(
            f"content file {path} needs a title and sections with headings "
            "(references/content-schema.json); pass the file the report was rendered from"
        )
    return (
        normal(content["title"]),
        [normal(s["heading"]) for s in sections],
        sum(1 for s in sections if s.get("chart")),
        sum(1 for s in sections if s.get("table")),
    )


def audit(report: Path, content: Path) -> dict[str, Any]:
    summary: dict[str, Any] = {"ok": False, "report": str(report), "content": str(content)}
    try:
        title, headings, charts, tables = load_content(content)
    except ValueError as exc:
        return {**summary, "problems": [{"check": "content", "message": str(exc), "line": None}]}
    try:
        size = report.stat().st_size
        if size > MAX_REPORT_BYTES:
            raise ValueError(f"{size:,} bytes; a report is at most {MAX_REPORT_BYTES:,} bytes")
        raw = report.read_bytes()
        text = raw.decode("utf-8")
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        message = f"cannot read report {report}: {reason}"
        return {**summary, "problems": [{"check": "read", "message": message, "line": None}]}
    parser = ReportAudit()
    parser.feed(text)
    parser.close()
    problems = parser.problems
    add = problems.append
    if not text.lstrip().lower().startswith("<!doctype html>"):
        add({"check": "structure", "message": "does not start with <!DOCTYPE html>", "line": 1})
    for tag in ("html", "head", "body"):
        if parser.counts[tag] != 1:
            message = f"{parser.counts[tag]} <{tag}> elements; a report has exactly one"
            add({"check": "structure", "message": message, "line": None})
    if len(parser.titles) != 1:
        message = f"{len(parser.titles)} <title> elements; a report has exactly one"
        add({"check": "title", "message": message, "line": None})
    elif parser.titles[0] != title:
        message = f"<title> is {parser.titles[0]!r} but the content title is {title!r}"
        add({"check": "title", "message": message, "line": None})
    present = Counter(parser.h2)
    for index, heading in enumerate(headings):
        if present[heading] > 0:
            present[heading] -= 1
        else:
            message = f"section {index} heading {heading!r} is not an <h2> in the report"
            add({"check": "headings", "message": message, "line": None})
    for kind, expected in (("chart", charts), ("table", tables)):
        if parser.counts[kind] < expected:
            message = (
                f"the content has {expected} {kind}(s) but the report has "
                f"{parser.counts[kind]}; re-render it from this content"
            )
            add({"check": kind + "s", "message": message, "line": None})
    return {
        **summary,
        "ok": not problems,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "size_bytes": len(raw),
        "title": parser.titles[0] if parser.titles else None,
        "headings": headings,
        "sections": len(headings),
        "charts": parser.counts["chart"],
        "tables": parser.counts["table"],
        "problems": problems,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="validate_report.py", description=__doc__.splitlines()[0])
    parser.add_argument("report", help="the rendered HTML report")
    parser.add_argument("--content", required=True, help="the content JSON it was rendered from")
    parser.add_argument("--out", help="also write the JSON summary to this file")
    args = parser.parse_args(argv)
    summary = audit(Path(args.report), Path(args.content))
    document = json.dumps(summary, indent=2, ensure_ascii=False)
    print(document)
    if args.out:
        try:
            Path(args.out).parent.mkdir(parents=True, exist_ok=True)
            Path(args.out).write_text(document + "\n", encoding="utf-8")
        except OSError as exc:
            print(
                f"validate_report.py: cannot write {args.out}: {exc.strerror}; write under "
                "/workspace/output or /workspace/work",
                file=sys.stderr,
            )
            return 1
    if not summary["ok"]:
        for p in summary["problems"]:
            where = f" (line {p['line']})" if p["line"] else ""
            print(f"validate_report.py: {args.report}{where}: {p['message']}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
