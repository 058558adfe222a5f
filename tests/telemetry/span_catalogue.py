"""docs/observability.md's "Span catalogue", read as data: span names, attributes, gate events.

The page's conventions: the overview table (`| Span | Recorded by | When |`) names every span; a
`When` that starts with `only` marks a span some runs never record. Each `### ` subsection names
its spans in backticks in its heading, and lists their attributes in an `| Attribute | Type |
Value |` table (a `Value` that starts with `only` marks an attribute recorded only then); the
Temporal SDK's spans are rows of a `| Span | Attributes | Only where they apply |` table; the
gate's events are rows of an `| Event | Attributes |` table.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from opentelemetry.sdk.trace import ReadableSpan

from schemas.names import ACTIVITIES

PAGE = Path(__file__).resolve().parents[2] / "docs" / "observability.md"
_TICKED = re.compile(r"`([^`]+)`")
_KEY = re.compile(r"^[A-Za-z_]+(\.[a-z_]+)+$")  # an attribute key: dotted (forge.*, gen_ai.*)


@dataclass
class Documented:
    """One span name's documented attributes: on every span, and only sometimes."""

    conditional_span: bool = False
    required: set[str] = field(default_factory=set)
    conditional: set[str] = field(default_factory=set)
    described: bool = False  # has a subsection or an SDK row


@dataclass
class Catalogue:
    spans: dict[str, Documented]
    events: dict[str, set[str]]  # gate event name -> its attribute keys


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _tables(text: str) -> list[tuple[list[str], list[list[str]]]]:
    """Every markdown table in `text`: (header cells, rows of cells)."""
    found: list[tuple[list[str], list[list[str]]]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].startswith("|") and i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            header, rows = _cells(lines[i]), []
            i += 2
            while i < len(lines) and lines[i].startswith("|"):
                rows.append(_cells(lines[i]))
                i += 1
            found.append((header, rows))
        else:
            i += 1
    return found


def read_catalogue(page: Path = PAGE) -> Catalogue:
    section = page.read_text().split("\n## Span catalogue\n", 1)[1].split("\n## ", 1)[0]
    overview, *subsections = section.split("\n### ")
    spans: dict[str, Documented] = {}
    for header, rows in _tables(overview):
        if header == ["Span", "Recorded by", "When"]:
            for row in rows:
                (name,) = _TICKED.findall(row[0])
                spans[name] = Documented(conditional_span=row[2].startswith("only"))
    events: dict[str, set[str]] = {}
    for sub in subsections:
        heading, _, body = sub.partition("\n")
        named = _TICKED.findall(heading)
        for header, rows in _tables(body):
            if header == ["Attribute", "Type", "Value"]:
                for name in named:
                    doc = spans.setdefault(name, Documented())
                    doc.described = True
                    for row in rows:
                        keys = set(_TICKED.findall(row[0]))
                        into = doc.conditional if row[2].startswith("only") else doc.required
                        into.update(keys)
            elif header == ["Span", "Attributes", "Only where they apply"]:
                for row in rows:
                    (name,) = _TICKED.findall(row[0])
                    doc = spans.setdefault(name, Documented())
                    doc.described = True
                    doc.required.update(_TICKED.findall(row[1]))
                    doc.conditional.update(_TICKED.findall(row[2]))
            elif header == ["Event", "Attributes"]:
                for row in rows:
                    (event,) = _TICKED.findall(row[0])
                    events[event] = {k for k in _TICKED.findall(row[1]) if _KEY.match(k)}
    return Catalogue(spans, events)


def catalogued_name(span: ReadableSpan) -> str:
    """The span's name as the catalogue lists it: a model, tool or activity as a placeholder."""
    attrs = span.attributes or {}
    if span.name == f"chat {attrs.get('gen_ai.request.model')}":
        return "chat {model}"
    if span.name == f"execute_tool {attrs.get('gen_ai.tool.name')}":
        return "execute_tool {tool}"
    kind, _, activity = span.name.partition(":")
    if kind in ("StartActivity", "RunActivity") and activity in ACTIVITIES:
        return f"{kind}:{{activity}}"
    return span.name


def by_catalogued_name(spans: Iterable[ReadableSpan]) -> dict[str, list[ReadableSpan]]:
    found: dict[str, list[ReadableSpan]] = defaultdict(list)
    for span in spans:
        found[catalogued_name(span)].append(span)
    return found


def recorded_problems(recorded: dict[str, list[ReadableSpan]], catalogue: Catalogue) -> list[str]:
    """What `recorded` (spans by catalogued name) has that the catalogue does not say: a span
    it does not list, a span without an attribute listed for every span of its name, or an
    attribute it does not list for that span."""
    problems = [f"{name}: recorded, not in the catalogue" for name in recorded]
    problems = [
        p for p, name in zip(problems, recorded, strict=True) if name not in catalogue.spans
    ]
    for name, found in sorted(recorded.items()):
        doc = catalogue.spans.get(name)
        if doc is None:
            continue
        for span in found:
            missing = doc.required - set(span.attributes or {})
            if missing:
                problems.append(f"{span.name}: lacks {sorted(missing)}")
        seen = set().union(*(set(s.attributes or {}) for s in found))
        extra = seen - doc.required - doc.conditional
        if extra:
            problems.append(f"{name}: records {sorted(extra)}, not in the catalogue")
    return problems
