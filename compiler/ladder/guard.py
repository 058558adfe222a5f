"""L3 guard: PII and secrets, found before any other stage (or any model) sees the payload.

Scans every string and (by default) every object key, including those of text that did
not parse. Reports never carry what was found, only a mask of it; the runner also masks
it in every later finding and correction. With `action: block` a hit is an error (in
block mode the run stops and the payload is withheld); with `action: redact` the match is
replaced in the payload by `[REDACTED:<kind>]` and the hit is a warning.
"""

import re
from typing import Any

from compiler.ladder.contract import GuardConfig
from compiler.ladder.detectors import (
    CONFIRM,
    LABELS,
    PREFILTER,
    aws_secret_under_key,
    compile_detectors,
    mask,
)
from compiler.ladder.pointer import Path, decode, matches
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L3"
_SHORTEST = 6  # no detector matches fewer characters


def _scan(text: str, pattern: re.Pattern[str], allow: tuple[str, ...]) -> list[tuple[str, str]]:
    """(kind, matched text) for each confirmed hit in a string."""
    hits: list[tuple[str, str]] = []
    if PREFILTER.search(text) is None:
        return hits
    for match in pattern.finditer(text):
        kind, found = match.lastgroup or "", match.group(0)
        confirm = CONFIRM.get(kind)
        if (confirm is None or confirm(found)) and found not in allow:
            hits.append((kind, found))
    return hits


class _Scanner:
    def __init__(self, config: GuardConfig, report: StageReport, pattern: re.Pattern[str]):
        self.config, self.report, self.pattern = config, report, pattern
        self.skip = [decode(p) for p in config.skip_paths]

    def string(self, path: Path, text: str, *, in_key: bool = False) -> str:
        """Report the hits in one string; return it, redacted when that is the action."""
        if len(text) < _SHORTEST:
            return text
        hits = _scan(text, self.pattern, self.config.allow)
        redact = self.config.action == "redact" and not in_key
        for kind, found in hits:
            shown = mask(kind, found)
            self.report.sensitive[found] = shown
            where = " in a field name" if in_key else ""
            verb = "redacted" if redact else "found"
            self.report.find(
                path, "warning" if redact else "error", f"{LABELS[kind]} {verb}{where}: {shown}"
            )
            if redact:
                text = text.replace(found, f"[REDACTED:{kind}]")
        return text

    def skipped(self, path: Path) -> bool:
        return any(matches(p, path) for p in self.skip)


def _walk(value: Any, scanner: _Scanner) -> Any:
    """Scan every key and string; returns the (possibly redacted) root value."""
    if isinstance(value, str):
        return scanner.string((), value)
    stack: list[tuple[Path, Any]] = [((), value)]
    while stack:
        path, current = stack.pop()
        members = current.items() if isinstance(current, dict) else enumerate(current)
        for key, member in list(members):
            where = (*path, key)
            if scanner.skip and scanner.skipped(where):
                continue
            if isinstance(key, str) and scanner.config.scan_keys:
                scanner.string(where, key, in_key=True)
            if isinstance(member, str):
                new = scanner.string(where, member)
                if isinstance(key, str) and aws_secret_under_key(key, member):
                    scanner.report.sensitive[member.strip()] = mask("aws_key", member.strip())
                    scanner.report.find(
                        where,
                        "error",
                        "AWS secret access key found: " + mask("aws_key", member.strip()),
                    )
                if new is not member:
                    current[key] = new
                    scanner.report.correct(where, "replace", member, new, "redacted by the guard")
            elif isinstance(member, (dict, list)):
                stack.append((where, member))
    return value


def guard(payload: Any, *, ctx: StageContext) -> StageReport:
    """Scan a parsed payload (or the text of one that did not parse) for PII and secrets."""
    report = StageReport(STAGE, payload)
    config = ctx.contract.guard
    pattern = ctx.view.memo(("guard",), lambda: compile_detectors(config.detectors))
    if not config.detectors:
        return report
    scanner = _Scanner(config, report, pattern)
    if isinstance(payload, (dict, list)):
        _walk(payload, scanner)
    elif isinstance(payload, str):
        new = scanner.string((), payload)
        if new != payload:
            report.correct((), "replace", payload, new, "redacted by the guard")
            report.payload = new
    return report
