"""JSON Web Tokens found whole when a log wrapped them, and, in cut text, by a part of one.

gitleaks' `jwt` rule finds a token on one line. A log or a terminal that wraps long lines
splits it (`eyJhbGci…J9.eyJzd…` / `…fQ.SflKxw…`), and a text kept by its first or last N
bytes may hold only part of one. A token counts by what its parts decode to, never by its
shape alone: a header is a JOSE header (`{"alg": …}`), claims are a JSON object.

- everywhere, a whole token: header, claims and signature, across line breaks;
- with `cut` (text that may have been cut before Forge saw it, the masker's case), also a
  token's first part (a JOSE header, with what follows of the claims and signature) and its
  last part: the end of a header before `.eyJ…` claims, or the end of the claims (decoding
  to text that closes with `}`) before a signature of 40 characters or more.

A signature alone, or its end, is any random token: nothing can tell it from one, so a text
that starts inside a signature keeps what is left of it. A whole token's wrapped signature
ends before its last line if it has its algorithm's length without it, so the next log line
is not taken for its end; elsewhere a line that may be more of a token is masked with it.
"""

import base64
import binascii
import json
import re
from collections.abc import Callable
from typing import Any

__all__ = ["jwt_spans"]

Span = tuple[int, int]

_CH = r"A-Za-z0-9_\-"
_BREAK = r"[ \t]{0,8}(?:\r?\n|\\r?\\n)[ \t]{0,16}"
_DOT = rf"(?:{_BREAK})?\.(?:{_BREAK})?"


def _segment(name: str, first: str, width: int, lines: int) -> str:
    return rf"(?P<{name}>{first}(?:{_BREAK}[{_CH}]{{1,{width}}}){{0,{lines}}})"


_SIG = _segment("sig", f"[{_CH}]{{1,2000}}", 2000, 40)
# From the header on; `ey` first so the engine looks for that literal, then checks the boundary.
_FROM_HEADER = re.compile(
    rf"ey(?<![{_CH}.]ey)"
    + _segment("header", f"[{_CH}]{{0,2000}}", 2000, 40)
    + rf"(?:{_DOT}{_segment('claims', f'[{_CH}]{{1,8000}}', 8000, 200)}(?:{_DOT}{_SIG}?)?)?"
)
# From inside a header (then `rest` is the claims) or inside the claims (`rest`: the signature):
# found by their dot, a literal the engine looks for; what comes before it is `_PART`.
_FROM_INSIDE = re.compile(
    rf"\.(?:{_BREAK})?(?=ey|[{_CH}]{{8}})"  # claims, or a signature's first line
    + _segment("rest", f"[{_CH}]{{1,8000}}", 8000, 200)
    + rf"(?:{_DOT}{_SIG})?"
)
# The segment before a dot, read backwards (in the reversed text) so that finding it costs
# its own length, not a window's: `_BREAK` reversed, then the segment's lines.
_BREAK_REVERSED = r"[ \t]{0,16}(?:\n\r?|n\\(?:r\\)?)[ \t]{0,8}"
_CH_REVERSED = rf"(?:(?!n\\)[{_CH}])"  # not the "n" of an escaped line break, read backwards
_PART_REVERSED = re.compile(
    rf"(?:{_BREAK_REVERSED})?{_CH_REVERSED}{{1,8000}}"
    rf"(?:{_BREAK_REVERSED}{_CH_REVERSED}{{1,8000}}){{0,200}}"
)
_STRIP = re.compile(_BREAK)
_JOSE = (
    "alg typ kid cty enc zip jku jwk x5u x5c x5t x5t#S256 crit b64 epk apu apv iv tag p2s "
    "p2c ppt url nonce"
).split()
_KEY_START = re.compile(rb'\{\s*"([A-Za-z0-9#]*)("?)')
_SHORTEST_PART = 8  # "eyJhbGci" decodes to '{"alg"'
_SHORTEST_SIG = 40  # HS256's is 43 characters
_LAST_CLAIMS_CHAR = "Q09"  # the last character of claims that end in "}", by their length mod 3
_B64URL = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
# A last group that encodes "}" (0x7d) as its last byte, by the group's length: "fQ", "?0" and
# "??X9" (X: one of 16 characters), from the values of its last two characters.
_CLOSING_GROUPS: tuple[tuple[int, Callable[[int, int], bool]], ...] = (
    (2, lambda a, b: a == 31 and b == 16),
    (3, lambda a, b: a & 15 == 7 and b == 52),
    (4, lambda a, b: a & 3 == 1 and b == 61),
)
_SIG_LENGTHS: dict[str, tuple[int, ...]] = {"HS256": (43,), "HS384": (64,), "HS512": (86,)}
_SIG_LENGTHS |= {"ES256": (86,), "ES384": (128,), "ES512": (176,), "EdDSA": (86, 152)}
_RSA_SIG_LENGTHS = (342, 512, 683)  # 2048-, 3072- and 4096-bit keys


def jwt_spans(text: str, *, cut: bool = False) -> list[Span]:
    """Where JSON Web Tokens are in `text` (see the module's docstring for which parts count)."""
    found: list[Span] = []
    if "ey" in text:
        found += [s for m in _FROM_HEADER.finditer(text) if (s := _from_header(m, cut))]
    if cut and "." in text:
        whole, i, covered_to = len(found), 0, 0
        backwards: _Backwards | None = None
        for m in _FROM_INSIDE.finditer(text):
            while i < whole and found[i][0] <= m.start():
                covered_to, i = max(covered_to, found[i][1]), i + 1
            if m.start() >= covered_to:  # not inside a token found from its header
                backwards = backwards or _Backwards(text)
                span = _from_inside(backwards, m)
                if span is not None:
                    found.append(span)
    return found


def _from_header(m: re.Match[str], cut: bool) -> Span | None:
    header = _joined(m.group(0)[: m.end("header") - m.start()])
    if m.group("claims") is None:  # the text ends inside the header, or it is no token
        return (m.start(), m.end()) if cut and _jose_start(header) else None
    head = _json_object(header)
    if head is None or not isinstance(head.get("alg"), str):
        return None
    if cut:  # header and claims, or a part of them, with what there is of the signature
        return m.start(), _sig_end(m, _sig_lengths(head["alg"]))
    sig = m.group("sig")
    if sig is None or len(_joined(sig)) < 10 or _json_object(_joined(m.group("claims"))) is None:
        return None
    return m.start(), _sig_end(m, _sig_lengths(head["alg"]))


def _from_inside(backwards: "_Backwards", m: re.Match[str]) -> Span | None:
    rest = _joined(m.group("rest"))
    if rest.startswith("ey") and _json_start(rest):  # a header's end, then claims
        return backwards.part_start(m.start()), m.end()
    if m.group("sig") is not None or len(rest) < _SHORTEST_SIG or not _random(rest):
        return None
    text = backwards.text
    start = backwards.part_start(m.start())
    part = _joined(text[start : m.start()])
    if (part or start == 0 or text[start - 1].isspace()) and _claims_end(part):
        return start, m.end()  # the claims' end, then the signature
    return None


class _Backwards:
    """A text and, once asked for, its reverse: where the segment before a dot starts."""

    def __init__(self, text: str) -> None:
        self.text, self._reversed = text, ""

    def part_start(self, dot: int) -> int:
        if not self._reversed:
            self._reversed = self.text[::-1]
        part = _PART_REVERSED.match(self._reversed, len(self.text) - dot)
        return len(self.text) - part.end() if part is not None else dot


def _sig_lengths(alg: str) -> tuple[int, ...]:
    return _RSA_SIG_LENGTHS if alg[:2] in ("RS", "PS") else _SIG_LENGTHS.get(alg, ())


def _sig_end(m: re.Match[str], lengths: tuple[int, ...]) -> int:
    """Where a wrapped signature ends: before its last line if, without it, it has its length.

    The next log line's first word reads as more of the signature when the token ends a line
    ("…w5c" / "INFO next"); the algorithm's signature length tells where it really ended.
    """
    sig = m.group("sig")
    if sig is None:
        return m.end()
    breaks = [b.start() for b in _STRIP.finditer(sig)]
    if breaks and len(_joined(sig[: breaks[-1]])) in lengths:
        return m.start("sig") + breaks[-1]
    return m.end()


def _joined(segment: str) -> str:
    return _STRIP.sub("", segment) if "\n" in segment or "\\" in segment else segment


def _decode(segment: str) -> bytes | None:
    try:
        return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))
    except (binascii.Error, ValueError):
        return None


def _json_object(segment: str) -> dict[str, Any] | None:
    data = _decode(segment)
    try:
        value = json.loads(data) if data else None
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _json_start(segment: str) -> bool:
    """Whether a segment (whole, or cut anywhere) starts like a JSON object: `{"`."""
    data = _decode(segment[: len(segment) // 4 * 4]) or b""
    return _KEY_START.match(data) is not None


def _jose_start(segment: str) -> bool:
    """Whether a segment cut anywhere starts like a JOSE header (`{"alg"`, `{"typ"`, …)."""
    if len(segment) < _SHORTEST_PART:
        return False
    data = _decode(segment[: len(segment) // 4 * 4]) or b""
    m = _KEY_START.match(data)
    if m is None:
        return False
    key = m.group(1).decode()
    if m.group(2):
        return key in _JOSE
    return bool(key) and m.end() == len(data) and any(k.startswith(key) for k in _JOSE)


def _claims_end(tail: str) -> bool:
    """Whether a segment's end, cut anywhere, is the end of base64url text closing with `}`."""
    if len(tail) <= 1:
        return tail == "" or tail in _LAST_CLAIMS_CHAR
    last = (_B64URL.find(tail[-2]), _B64URL.find(tail[-1]))
    for group, closes in _CLOSING_GROUPS:  # the claims' last group is 2, 3 or 4 characters
        if not closes(*last):
            continue
        chunk = tail[(len(tail) - group) % 4 :]  # whole groups only: they decode exactly
        data = _decode(chunk) if len(chunk) >= group else None
        if data is None or sum(32 <= b < 127 for b in data) >= 0.9 * len(data):
            return True
    return False


def _random(segment: str) -> bool:
    return not segment.islower() and not segment.isupper() and not segment.isdigit()
