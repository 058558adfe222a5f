#!/usr/bin/env python3
"""Render report content (JSON) into one self-contained HTML5 file.

    python render_report.py --content CONTENT.json --out REPORT.html
                            [--template standard|executive-brief|dashboard]
                            [--theme modern|executive|minimal]

The content is validated against references/content-schema.json first. Every content string is
HTML-escaped; the theme's CSS is inlined; bar charts are inline SVG. The output has no script and
loads nothing from anywhere. Exit 0: rendered (a JSON summary on stdout); 1: the content, a path
or an asset is wrong (the reason on stderr); 2: bad arguments.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import string
import sys
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, ValidationError

sys.dont_write_bytecode = True  # the skill directory is read-only: no __pycache__ beside us
sys.path.insert(0, str(Path(__file__).resolve().parent))
from barchart import bar_chart, esc, fmt_number  # noqa: E402

VERSION = "1.0.0"
SKILL_DIR = Path(__file__).resolve().parent.parent
ASSETS = SKILL_DIR / "assets"
SCHEMA_PATH = SKILL_DIR / "references" / "content-schema.json"
MAX_CONTENT_BYTES = 16 * 1024 * 1024
TEMPLATE_FIELDS = frozenset(
    {
        "title_text",
        "generator",
        "css",
        "header",
        "summary",
        "toc",
        "highlights",
        "sections",
        "footer",
    }
)
REQUIRED_FIELDS = frozenset({"title_text", "css", "sections"})
_COLOR = re.compile(r"#[0-9A-Fa-f]{3,8}")
_CSS_EXTERNAL = re.compile(r"@import|</style|expression\s*\(|url\(\s*['\"]?(?!data:)", re.I)
MAX_PROBLEMS = 20


class ReportError(Exception):
    """A problem the caller can fix; the message names what, where and what to do."""


def json_path(parts: Any) -> str:
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


# --- inputs -----------------------------------------------------------------------------------


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number; use null or a finite number")


def load_content(path: Path) -> dict[str, Any]:
    """The content document, valid against the schema, or a ReportError listing every problem."""
    try:
        size = path.stat().st_size
        if size > MAX_CONTENT_BYTES:
            raise ReportError(
                f"{path}: {size:,} bytes; content is at most {MAX_CONTENT_BYTES:,} bytes "
                "(split the report or summarise the data first)"
            )
        text = path.read_bytes().decode("utf-8-sig")
    except OSError as exc:
        raise ReportError(f"cannot read content file {path}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ReportError(f"{path}: not UTF-8 at byte {exc.start}; save it as UTF-8") from None
    try:
        content = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise ReportError(
            f"{path}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError as exc:
        raise ReportError(f"{path}: {exc}") from None
    try:
        schema = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(
            f"the skill's content schema {SCHEMA_PATH} cannot be read ({exc}); reinstall the "
            "html-report-generator package"
        ) from None
    validator = Draft202012Validator(schema)
    problems = [
        f"{json_path(e.absolute_path)}: {_explain(e)}"
        for e in sorted(validator.iter_errors(content), key=lambda e: list(map(str, e.path)))
    ]
    if not problems:
        problems = _shape_problems(content)
    if problems:
        shown = "\n  ".join(problems[:MAX_PROBLEMS])
        more = (
            f"\n  ... and {len(problems) - MAX_PROBLEMS} more"
            if len(problems) > MAX_PROBLEMS
            else ""
        )
        raise ReportError(
            f"{path} does not match references/content-schema.json:\n  {shown}{more}\n"
            "fix these fields (see REFERENCE.md, 'Content') and render again"
        )
    return content  # type: ignore[no-any-return]


def _explain(error: ValidationError) -> str:
    if error.validator == "minProperties" and list(error.absolute_path)[:1] == ["sections"]:
        return "a section needs paragraphs, bullets, a table, metrics or a chart under its heading"
    return error.message


def _shape_problems(content: dict[str, Any]) -> list[str]:
    """What the schema cannot say: row widths and chart label/value counts."""
    problems = []
    for i, section in enumerate(content["sections"]):
        table = section.get("table")
        if table:
            width = len(table["columns"])
            for r, row in enumerate(table["rows"]):
                if len(row) != width:
                    problems.append(
                        f"$.sections[{i}].table.rows[{r}]: {len(row)} cells but the table has "
                        f"{width} columns"
                    )
        chart = section.get("chart")
        if chart and len(chart["labels"]) != len(chart["values"]):
            problems.append(
                f"$.sections[{i}].chart: {len(chart['labels'])} labels but "
                f"{len(chart['values'])} values; give one value per label"
            )
    return problems


def load_manifest() -> dict[str, Any]:
    path = ASSETS / "theme-manifest.json"
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ReportError(f"cannot read {path} ({exc}); reinstall the package") from None
    for name, theme in manifest["themes"].items():
        for key, color in theme["chart"].items():
            if not _COLOR.fullmatch(color):
                raise ReportError(
                    f"{path}: themes.{name}.chart.{key} {color!r} is not a #rgb colour; fix it"
                )
    return manifest  # type: ignore[no-any-return]


def _asset(manifest: dict[str, Any], kind: str, name: str) -> tuple[Path, str]:
    entries = manifest[kind]
    if name not in entries:
        raise ReportError(
            f"unknown {kind[:-1]} {name!r}; choose one of {', '.join(sorted(entries))} "
            "(listed in assets/theme-manifest.json)"
        )
    path = ASSETS / entries[name]["file"]
    try:
        return path, path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ReportError(f"{kind[:-1]} {name}: cannot read {path}: {exc.strerror}") from None


def load_template(manifest: dict[str, Any], name: str) -> string.Template:
    path, text = _asset(manifest, "templates", name)
    template = string.Template(text)
    if not template.is_valid():
        raise ReportError(f"{path}: a '$' that is not a ${{field}}; write '$$' for a dollar sign")
    fields = set(template.get_identifiers())
    if fields - TEMPLATE_FIELDS or REQUIRED_FIELDS - fields:
        raise ReportError(
            f"{path}: unknown fields {sorted(fields - TEMPLATE_FIELDS)}, missing required "
            f"{sorted(REQUIRED_FIELDS - fields)}; templates may use {sorted(TEMPLATE_FIELDS)}"
        )
    return template


def load_theme(manifest: dict[str, Any], name: str) -> tuple[str, dict[str, str]]:
    path, css = _asset(manifest, "themes", name)
    found = _CSS_EXTERNAL.search(css)
    if found:
        line = css.count("\n", 0, found.start()) + 1
        raise ReportError(
            f"{path} line {line}: {found.group(0)!r} would load or escape to something outside "
            "the report; themes must be plain self-contained CSS"
        )
    return css.strip(), manifest["themes"][name]["chart"]


# --- rendering --------------------------------------------------------------------------------


def metrics_html(metrics: list[dict[str, Any]]) -> str:
    items = []
    for m in metrics:
        value = m["value"] if isinstance(m["value"], str) else fmt_number(m["value"])
        unit = f'<span class="metric-unit">{esc(m["unit"])}</span>' if m.get("unit") else ""
        items.append(
            f'<li class="metric"><span class="metric-label">{esc(m["label"])}</span>'
            f'<span class="metric-value">{esc(value)}{unit}</span></li>'
        )
    return f'<ul class="metrics">{"".join(items)}</ul>'


def _cell(value: object) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return fmt_number(value, decimals=4)
    return str(value)


def table_html(table: dict[str, Any]) -> str:
    columns, rows = table["columns"], table["rows"]
    numeric = [
        any(r[c] is not None for r in rows)
        and all(
            r[c] is None or (isinstance(r[c], int | float) and not isinstance(r[c], bool))
            for r in rows
        )
        for c in range(len(columns))
    ]
    cls = [' class="num"' if n else "" for n in numeric]
    head = "".join(f'<th scope="col"{cls[c]}>{esc(name)}</th>' for c, name in enumerate(columns))
    body = "".join(
        "<tr>" + "".join(f"<td{cls[c]}>{esc(_cell(v))}</td>" for c, v in enumerate(row)) + "</tr>"
        for row in rows
    )
    caption = f"<caption>{esc(table['caption'])}</caption>" if table.get("caption") else ""
    return (
        f'<div class="table-wrap"><table class="data">{caption}<thead><tr>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def section_html(index: int, section: dict[str, Any], colors: dict[str, str]) -> str:
    heading = section["heading"]
    parts = [f'<section class="section" id="section-{index}">', f"<h2>{esc(heading)}</h2>"]
    parts += [f"<p>{esc(p)}</p>" for p in section.get("paragraphs", [])]
    if section.get("metrics"):
        parts.append(metrics_html(section["metrics"]))
    if section.get("bullets"):
        items = "".join(f"<li>{esc(b)}</li>" for b in section["bullets"])
        parts.append(f'<ul class="bullets">{items}</ul>')
    chart = section.get("chart")
    if chart:
        title = chart.get("title") or heading
        parts.append(
            f'<figure class="chart">{bar_chart(chart, colors, f"Bar chart: {title}")}'
            f"<figcaption>{esc(title)}</figcaption></figure>"
        )
    if section.get("table"):
        parts.append(table_html(section["table"]))
    parts.append("</section>")
    return "".join(parts)


def render(
    content: dict[str, Any],
    template: string.Template,
    css: str,
    colors: dict[str, str],
    names: tuple[str, str],
) -> str:
    sections = content["sections"]
    title = esc(content["title"])
    header = [f'<header class="report-header"><h1>{title}</h1>']
    if content.get("subtitle"):
        header.append(f'<p class="subtitle">{esc(content["subtitle"])}</p>')
    if content.get("generated_at"):
        when = esc(content["generated_at"])
        header.append(f'<p class="generated">Generated <time datetime="{when}">{when}</time></p>')
    header.append("</header>")
    summary = ""
    if content.get("summary"):
        summary = f'<section class="summary"><p>{esc(content["summary"])}</p></section>'
    toc = "".join(
        f'<li><a href="#section-{i}">{esc(s["heading"])}</a></li>'
        for i, s in enumerate(sections, start=1)
    )
    all_metrics = [m for s in sections for m in s.get("metrics", [])][:8]
    highlights = ""
    if all_metrics:
        highlights = (
            '<section class="highlights" aria-label="At a glance"><h2>At a glance</h2>'
            f"{metrics_html(all_metrics)}</section>"
        )
    generator = f"html-report-generator {VERSION}; template {names[0]}; theme {names[1]}"
    fields = {
        "title_text": title,
        "generator": esc(generator),
        "css": css,
        "header": "".join(header),
        "summary": summary,
        "toc": f'<nav class="toc" aria-label="Contents"><h2>Contents</h2><ol>{toc}</ol></nav>',
        "highlights": highlights,
        "sections": "\n".join(section_html(i, s, colors) for i, s in enumerate(sections, start=1)),
        "footer": f'<footer class="report-footer">{esc(generator)}</footer>',
    }
    return template.substitute(fields)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="render_report.py", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--content", required=True, help="content JSON (references/content-schema.json)"
    )
    parser.add_argument("--out", required=True, help="the HTML file to write")
    parser.add_argument("--template", help="a template from assets/theme-manifest.json")
    parser.add_argument("--theme", help="a theme from assets/theme-manifest.json")
    args = parser.parse_args(argv)
    content_path, out = Path(args.content), Path(args.out)
    try:
        manifest = load_manifest()
        names = (
            args.template or manifest["default_template"],
            args.theme or manifest["default_theme"],
        )
        template = load_template(manifest, names[0])
        css, colors = load_theme(manifest, names[1])
        content = load_content(content_path)
        document = render(content, template, css, colors, names).encode("utf-8")
        if out.resolve() == content_path.resolve():
            raise ReportError(f"--out {out} is the content file; write the report elsewhere")
        try:
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(document)
        except OSError as exc:
            raise ReportError(
                f"cannot write {out}: {exc.strerror}; write under /workspace/output or "
                "/workspace/work (the skill directory is read-only)"
            ) from None
    except ReportError as exc:
        print(f"render_report.py: {exc}", file=sys.stderr)
        return 1
    sections = content["sections"]
    summary = {
        "out": str(out),
        "template": names[0],
        "theme": names[1],
        "title": content["title"],
        "sections": len(sections),
        "charts": sum(1 for s in sections if "chart" in s),
        "tables": sum(1 for s in sections if "table" in s),
        "size_bytes": len(document),
        "sha256": hashlib.sha256(document).hexdigest(),
    }
    print(json.dumps(summary, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
