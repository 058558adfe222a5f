"""Commands shown with their output in README.md and docs/, and the check that the output is true.

A fenced block holds one or more `$ COMMAND` lines, each followed by the output it printed.
Shown output may be abridged: a line holding only `…` stands for omitted lines. Every other
shown line must appear in the command's real output, in order, after both sides are normalised
for what changes from run to run (run ids, durations, timestamps); hashes are compared as they
are, so a stale hash fails.
"""

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
ELLIPSIS = "…"
_VOLATILE = (
    (re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}(?:-t[0-9a-f]{8})?"), "run-ID"),
    (re.compile(r"\b\d+(\.\d+)?s\b"), "Ns"),
    (re.compile(r"\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})?"), "TIME"),
    (re.compile(r"\b\d{2}:\d{2}:\d{2}\b"), "HH:MM:SS"),  # a clock time in a table
    (re.compile(r"\b\d{4}-\d{2}-\d{2} UTC\b"), "DATE UTC"),  # a table's day, as in its caption
    (re.compile(r"\.forge-doctor/[0-9a-f]{32}\b"), ".forge-doctor/PROBE"),  # doctor's S3 probe
)


@dataclass(frozen=True)
class Shown:
    """One `$ command` and the output lines shown under it."""

    source: str  # file:line of the command
    command: str
    output: list[str]
    block: str = ""  # file:line of the fence that opens its block: a block's commands share state


def shown_commands(path: Path) -> Iterator[Shown]:
    """Every `$ command` in the fenced blocks of a markdown file, with its shown output."""
    lines = path.read_text(encoding="utf-8").splitlines()
    in_block = False
    current: Shown | None = None
    block = ""
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            if in_block and current is not None:
                yield current
            in_block, current = not in_block, None
            block = f"{path.relative_to(ROOT)}:{number}"
            continue
        if not in_block:
            continue
        if line.startswith("$ "):
            if current is not None:
                yield current
            current = Shown(f"{path.relative_to(ROOT)}:{number}", line[2:].strip(), [], block)
        elif current is not None:
            current.output.append(line)


def normalise(line: str) -> str:
    for pattern, replacement in _VOLATILE:
        line = pattern.sub(replacement, line)
    return line.rstrip()


def missing_lines(shown: list[str], actual: str) -> list[str]:
    """Shown lines not found in `actual` in order (empty: the shown output is true)."""
    real = [normalise(x) for x in actual.splitlines()]
    at = 0
    missing = []
    for line in shown:
        want = normalise(line)
        if want in ("", ELLIPSIS):
            continue
        try:
            at = real.index(want, at) + 1
        except ValueError:
            missing.append(line)
    return missing


def shown_width(output: list[str]) -> int:
    """The terminal width the output was shown at, so a table wraps as the page shows.

    The widest line, plus one for a borderless table (its rule under the header, `─` only):
    its lines end in a column of padding the page does not keep.
    """
    width = max((len(x) for x in output), default=80)
    borderless = any(set(x.strip()) == {"─"} and x.startswith(" ") for x in output)
    return width + 1 if borderless else width
