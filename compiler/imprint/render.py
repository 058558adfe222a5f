"""The text a model sees: a 200-character behavioral header first, the skeleton after (seed §2.2).

Characters 0-50 say type and structure, 50-100 severity and headline, 100-150 constraints and
boundaries, 150-200 next actions. Each slot is one line padded (or cut with "…") to exactly
50 characters including its newline, so every slot starts at its offset; anything cut is
repeated in full after the header, before the skeleton.
"""

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from compiler.imprint.checks import check_json
from compiler.imprint.limits import MAX_NESTING
from compiler.imprint.tokens import ONE_OF, REF_MARKERS, parse_token

SLOT = 50
HEADER = 4 * SLOT


@dataclass(frozen=True, slots=True)
class Header:
    """The four slots of the behavioral header."""

    structure: str
    headline: str
    severity: str = "REQUIRED"
    constraints: Sequence[str] = ()
    next_actions: Sequence[str] = ()


def render_template(template: Any, header: Header | str | None = None) -> str:
    """Render a template for a model: the 200-character header, then the JSON skeleton.

    Args:
        template: a template from `schema_to_template` / `operation_template`.
        header: the behavioral header. A string is read as up to four lines, one per slot
            (structure, "SEVERITY: headline", constraints, next actions). When None, one is
            derived from the template (its shape and how many tokens must be filled).

    Returns:
        The text: exactly 200 header characters, optional details, then the skeleton.
    """
    check_json(template, "$")
    if isinstance(header, str):
        header = _from_text(header, default_header(template))
    header = header or default_header(template)
    constraints = "; ".join(header.constraints) or "Use only values the tokens allow."
    actions = "; ".join(header.next_actions) or "Reply with the filled JSON only."
    slots = [
        header.structure,
        f"{header.severity}: {header.headline}",
        constraints,
        actions,
    ]
    fitted = [_fit(text) for text in slots]
    overflow = [text for text, cut in zip(slots, fitted, strict=True) if cut[1]]
    lines = "".join(text for text, _ in fitted)
    details = "".join(f"- {text}\n" for text in overflow)
    skeleton = json.dumps(template, indent=2, ensure_ascii=False)
    return lines + (f"Details:\n{details}" if details else "") + f"Template:\n{skeleton}\n"


def default_header(template: Any) -> Header:
    """A header derived from the template alone."""
    counts = {"FILL": 0, "OPTIONAL": 0, "AUTO": 0}
    _count(template, counts, 0)
    shape = "JSON object" if isinstance(template, dict) else "JSON value"
    if isinstance(template, list):
        shape = "JSON array"
    return Header(
        structure=f"{shape} template, {sum(counts.values())} tokens",
        headline=f"fill {counts['FILL']} required token(s)",
        constraints=("Rules sit in each token: enum, range, format",),
        next_actions=("Return the filled JSON; drop unused OPTIONAL",),
    )


def _from_text(text: str, fallback: Header) -> Header:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    lines += [""] * (4 - len(lines))
    severity, sep, headline = lines[1].partition(":")
    if not sep:
        severity, headline = fallback.severity, lines[1]
    return Header(
        structure=lines[0] or fallback.structure,
        headline=headline.strip() or fallback.headline,
        severity=severity.strip() or fallback.severity,
        constraints=(lines[2],) if lines[2] else fallback.constraints,
        next_actions=(" ".join(lines[3:]).strip(),) if lines[3] else fallback.next_actions,
    )


def _fit(text: str) -> tuple[str, bool]:
    """One slot line of exactly SLOT characters (newline included); True if cut."""
    flat = " ".join(text.split())
    width = SLOT - 1
    if len(flat) > width:
        return flat[: width - 1] + "…\n", True
    return flat.ljust(width) + "\n", False


def _count(node: Any, counts: dict[str, int], depth: int) -> None:
    if depth > MAX_NESTING:
        return
    if isinstance(node, str):
        if node in REF_MARKERS:
            return
        token = parse_token(node)
        if token is not None and not token.kind.startswith("KEY"):
            kind = token.kind.replace("_ENUM", "")
            counts[kind] = counts.get(kind, 0) + 1
    elif isinstance(node, dict):
        for key, value in node.items():
            if key != ONE_OF:
                _count(value, counts, depth + 1)
            else:
                _count(value[:1] if isinstance(value, list) else value, counts, depth + 1)
    elif isinstance(node, list):
        for value in node:
            _count(value, counts, depth + 1)
