r"""L3 guard: PII and secrets, found before any other stage (or any model) sees the payload.

Scans every string, every integer (cards, phones, SSNs in their decimal form) and (by
default) every object key, including the text of a payload that did not parse. A string
holding JSON text is also scanned as the value it decodes to, so `\u0067hp_...` cannot
slip past the guard and out of L0c's parse. Reports never carry what was found, only a mask
of it; the runner also masks it in every later finding and correction.

What a hit does: with `action: block` it is an error (in block mode the run stops and the
payload is withheld); with `action: redact` it is a warning. Whenever the run goes on after
a hit (redact, or report mode), the match is replaced in the payload by `[REDACTED:<kind>]`
(a number by that string; a field name holding a secret is renamed in report mode), so no
later stage and no returned payload ever holds it. Each such change is a correction whose
`before` shows masks, never the value.
"""

import copy
import json
import re
from collections.abc import Callable
from typing import Any, NamedTuple

from compiler.ladder.contract import LadderContract
from compiler.ladder.detectors import (
    aws_secret_under_key,
    label,
    mask,
    placeholder,
)
from compiler.ladder.intake import MAX_INTEGER, parse_json_text
from compiler.ladder.pointer import Path, Token, decode, encode, matches
from compiler.ladder.result import Severity
from compiler.ladder.scan import Detectors
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L3"
_NESTING = 4  # JSON text inside JSON text is decoded and scanned this many levels deep
_JSON_TEXT = re.compile(r"\s*[\[{]")
_JSON_START = frozenset("[{ \t\r\n")
_SMALLEST = 10_000_000  # no detector matches a number of fewer than 8 digits

Found = tuple[str, str]  # (detector, matched text)
StandIn = Callable[[str, str], str]


def _placeholder(kind: str, found: str) -> str:
    return placeholder(kind)


def _shown(kind: str, found: str) -> str:
    return f"<{mask(kind, found)}>"


def _splice(text: str, spans: list[tuple[int, int, str]], stand_in: StandIn) -> str:
    parts, last = [], 0
    for start, end, kind in spans:
        parts += [text[last:start], stand_in(kind, text[start:end])]
        last = end
    return "".join(parts) + text[last:]


def _integral(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer() and abs(value) <= MAX_INTEGER:
        return int(value)
    return None


class _Scanner:
    def __init__(self, ctx: StageContext, report: StageReport) -> None:
        config = ctx.contract.guard
        self.config, self.report, self.limits = config, report, ctx.contract.limits
        self.detect: Detectors = ctx.view.memo(
            ("guard", config.detectors), lambda: Detectors(config.detectors)
        )
        self.allow = frozenset(config.allow)
        self.skip = [decode(p) for p in config.skip_paths]
        self.redact_values = config.action == "redact" or ctx.mode == "report"
        self.redact_keys = ctx.mode == "report"
        self.severity: Severity = "warning" if config.action == "redact" else "error"

    # -- finding -------------------------------------------------------------------------

    def _spans(self, text: str, key: str | None) -> list[tuple[int, int, str]]:
        return [h for h in self.detect.text(text, key) if text[h[0] : h[1]] not in self.allow]

    def _decoded(self, text: str, depth: int) -> Any:
        if text[:1] not in _JSON_START or depth >= _NESTING or _JSON_TEXT.match(text) is None:
            return None
        return parse_json_text(text, self.limits)

    def _aws_secret(self, text: str, key: str | None) -> bool:
        return (
            key is not None
            and len(text) >= 40
            and aws_secret_under_key(key, text)
            and text.strip() not in self.allow
        )

    def text_hits(self, text: str, key: str | None, depth: int = 0) -> list[Found]:
        """What a string holds, itself and (if it is JSON text) as the value it decodes to."""
        if (
            key is None  # the fast path: most strings hold nothing
            and text[:1] not in _JSON_START
            and not self.detect.quick(text)
        ):
            return []
        found = [(kind, text[s:e]) for s, e, kind in self._spans(text, key)]
        if self._aws_secret(text, key):
            found.append(("aws_secret", text.strip()))
        decoded = self._decoded(text, depth)
        if decoded is not None:
            found += self.value_hits(decoded, None, depth + 1)
        return list(dict.fromkeys(found)) if found else found

    def number_hit(self, value: Any, key: str | None) -> Found | None:
        n = _integral(value)
        if n is None or -_SMALLEST < n < _SMALLEST or str(n) in self.allow:
            return None
        kind = self.detect.number(n, key)
        return (kind, str(n)) if kind is not None else None

    def value_hits(self, value: Any, key: str | None, depth: int) -> list[Found]:
        """Every hit in a decoded value: its strings, numbers and (if scanned) keys."""
        found: list[Found] = []
        stack: list[tuple[str | None, Any]] = [(key, value)]
        while stack:
            name, current = stack.pop()
            if isinstance(current, str):
                found += self.text_hits(current, name, depth)
            elif isinstance(current, dict):
                for k, v in current.items():
                    if self.config.scan_keys:
                        found += self.text_hits(k, None, depth)
                    stack.append((k, v))
            elif isinstance(current, list):
                stack += [(name, v) for v in current]
            elif (hit := self.number_hit(current, name)) is not None:
                found.append(hit)
        return found

    # -- rewriting -----------------------------------------------------------------------

    def rewrite_text(self, text: str, key: str | None, stand_in: StandIn, depth: int = 0) -> str:
        """The string with every hit replaced by `stand_in`, inside its JSON text too."""
        if self._aws_secret(text, key):
            return stand_in("aws_secret", text.strip())
        out = _splice(text, self._spans(text, key), stand_in)
        decoded = self._decoded(out, depth)
        if decoded is not None and self.value_hits(decoded, None, depth + 1):
            rewritten = self.rewrite_value(decoded, None, stand_in, depth + 1)
            out = json.dumps(rewritten, ensure_ascii=False)
        return out

    def rewrite_value(self, value: Any, key: str | None, stand_in: StandIn, depth: int) -> Any:
        if isinstance(value, str):
            return self.rewrite_text(value, key, stand_in, depth)
        if isinstance(value, dict):
            return {
                (self.rewrite_text(k, None, stand_in, depth) if self.config.scan_keys else k): (
                    self.rewrite_value(v, k, stand_in, depth)
                )
                for k, v in value.items()
            }
        if isinstance(value, list):
            return [self.rewrite_value(v, key, stand_in, depth) for v in value]
        hit = self.number_hit(value, key)
        return stand_in(*hit) if hit is not None else value

    # -- reporting -----------------------------------------------------------------------

    def _report(self, path: Path, hits: list[Found], *, in_key: bool, redacted: bool) -> None:
        severity: Severity = "error" if in_key else self.severity
        where = " in a field name" if in_key else ""
        verb = (
            "redacted" if severity == "warning" else "found and redacted" if redacted else "found"
        )
        for kind, found in hits:
            shown = mask(kind, found)
            self.report.sensitive[found] = shown
            self.report.detections.append((encode(path), kind, shown))
            self.report.find(path, severity, f"{label(kind)} {verb}{where}: {shown}")

    def member(self, path: Path, value: Any, key: str | None) -> Any:
        """Report the hits in one string or number; return it, redacted when the run goes on."""
        if isinstance(value, str):
            hits = self.text_hits(value, key)
        else:
            hit = self.number_hit(value, key)
            hits = [hit] if hit is not None else []
        if not hits:
            return value
        self._report(path, hits, in_key=False, redacted=self.redact_values)
        if not self.redact_values:
            return value
        new = self.rewrite_value(value, key, _placeholder, 0)
        before = self.rewrite_value(value, key, _shown, 0)
        self.report.correct(path, "replace", before, new, "redacted by the guard")
        return new

    def key(self, path: Path, key: str, taken: set[str]) -> tuple[str, bool]:
        """Report the hits in a field name: (the name to show in paths, whether to rename)."""
        hits = self.text_hits(key, None) if self.config.scan_keys else []
        if not hits:
            return key, False
        shown = self.rewrite_text(key, None, _shown)
        self._report((*path, shown), hits, in_key=True, redacted=self.redact_keys)
        if not self.redact_keys:
            return shown, False
        new = base = self.rewrite_text(key, None, _placeholder)
        counter = 1
        while new in taken:
            counter += 1
            new = f"{base}#{counter}"
        taken.add(new)
        self.report.correct(
            (*path, new),
            "move",
            encode((*path, shown)),
            encode((*path, new)),
            "field name redacted by the guard",
        )
        return new, True

    def skipped(self, path: Path) -> bool:
        return bool(self.skip) and any(matches(p, path) for p in self.skip)


def _walk(root: Any, scanner: _Scanner) -> Any:
    """Scan every key, string and number; returns the (possibly redacted) root value."""
    if not isinstance(root, (dict, list)):
        return scanner.member((), root, None)
    stack: list[tuple[Path, Any, str | None]] = [((), root, None)]
    while stack:
        path, current, parent_key = stack.pop()
        members: list[tuple[Token, Any]] = (
            list(current.items()) if isinstance(current, dict) else list(enumerate(current))
        )
        renames: dict[str, str] = {}
        taken = set(current) if isinstance(current, dict) else set()
        for token, value in members:
            if scanner.skipped((*path, token)):
                continue
            shown: Token = token
            if isinstance(token, str):
                shown, rename = scanner.key(path, token, taken)
                if rename:
                    renames[token] = str(shown)
            key = token if isinstance(token, str) else parent_key  # items share their array's
            where = (*path, shown)
            if isinstance(value, (dict, list)):
                stack.append((where, value, key))
                continue
            new = scanner.member(where, value, key)
            if new is not value:
                current[token] = new
        if renames:
            items = [(renames.get(k, k), v) for k, v in current.items()]
            current.clear()
            current.update(items)
    return root


def guard(payload: Any, *, ctx: StageContext) -> StageReport:
    """Scan a parsed payload (or the text of one that did not parse) for PII and secrets."""
    report = StageReport(STAGE, payload)
    if not ctx.contract.guard.detectors:
        return report
    report.payload = _walk(payload, _Scanner(ctx, report))
    return report


def hits_in_value(path: Path, value: Any, ctx: StageContext) -> dict[str, str]:
    """What the guard finds in one value written at `path` (by a model): raw match -> mask.

    The contract's detectors, allow list and skip paths apply as they do to the payload.
    """
    if not ctx.contract.guard.detectors:
        return {}
    scanner = _Scanner(ctx, StageReport(STAGE, None))
    if scanner.skipped(path):
        return {}
    key = next((t for t in reversed(path) if isinstance(t, str)), None)
    if isinstance(value, str):
        hits = scanner.text_hits(value, key)
    else:
        hit = scanner.number_hit(value, key)
        hits = [hit] if hit is not None else []
    return {found: mask(kind, found) for kind, found in hits}


class Detection(NamedTuple):
    """One thing `scan_document` found: where (a JSON pointer), by which detector, masked."""

    path: str
    detector: str
    masked: str


def scan_document(value: Any, contract: LadderContract | None = None) -> list[Detection]:
    """What L3 finds in a JSON value (or a plain string), by JSON pointer; never the value.

    The same scan the ladder runs (`forge guard scan` prints it): every string, number and
    field name, JSON text inside strings, with the contract's detectors and allow list (by
    default: every detector, nothing allowed).
    """
    contract = contract or LadderContract(json_schema={"type": "object"}, top_level="object")
    ctx = StageContext(
        contract=contract, mode="report", model=None, later=frozenset(), view=contract.view
    )
    report = StageReport(STAGE, value)
    if contract.guard.detectors:
        _walk(copy.deepcopy(value), _Scanner(ctx, report))
    return [Detection(p, k, m) for p, k, m in report.detections]
