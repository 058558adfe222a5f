r"""A private key's base64 body found without its BEGIN line: text cut before Forge saw it.

A sandbox's stderr kept as its last N bytes, or a failure message kept as its last lines, can
start inside a PEM block: the `-----BEGIN … PRIVATE KEY-----` line the `private_key` pattern
finds is gone, the body is not. Two shapes are taken for a key's body:

- `tails`: the base64 before an `-----END … PRIVATE KEY-----` line, walked back from it line by
  line: the last line (any length), then full lines (40 characters or more), and at the top a
  partial first line: the text's first word (cut mid-line) or a word after a prefix that is
  no prose ("stderr: MIIE…", "key=MIIE…"). A short word after another word is prose and ends
  the walk, so "here is the key" before a body stays as it is;
- `bare_runs` (for text cut on both sides, or a body printed without its armour): two or more
  consecutive lines of exactly PEM's width (64; 70 for OpenSSH, 76 for MIME), each of mixed
  case and not hex, with a partial line either side. A lone line never counts (48 random
  bytes in base64 are 64 characters), nor a run between the armour lines of something else
  (a certificate).

Line breaks are real ones or JSON-escaped (`\n`), so a key quoted in a JSON log line counts.
"""

import re

from compiler.ladder.detectors import PRIVATE_KEY_END, PRIVATE_KEY_WINDOW

__all__ = ["bare_runs", "tails"]

Span = tuple[int, int]

_B64 = "A-Za-z0-9+/"
_WORD = re.compile(rf"(?<!\\)[{_B64}]+")  # a base64 run; the "n" of an escaped "\n" is no part
_FULL_LINE = 40  # a body line above the last one: PEM's lines are 64 wide, OpenSSH's 70
_WIDTHS = (64, 70, 76)
_BREAK = r"[ \t]{0,8}(?:\r?\n|\\r?\\n)[ \t]{0,16}"
_FULL = rf"[{_B64}]{{64}}(?:[{_B64}]{{6}}){{0,2}}"  # 64, 70 or 76 wide
_LINES = rf"[ \t]{{0,16}}(?P<lines>{_FULL}(?:{_BREAK}{_FULL})+)(?![{_B64}])"
# Found from the line break before them (a literal the engine looks for), or at the start.
_RUN = re.compile(rf"\n{_LINES}")
_ESCAPED_RUN = re.compile(rf"\\n{_LINES}")
_RUNS = ((_RUN, "\n"), (_ESCAPED_RUN, "\\n"))
_RUN_AT_START = re.compile(_LINES)
_PARTIAL_BEFORE = re.compile(rf"(?<!\\)[{_B64}]{{1,76}}{_BREAK}\Z")
_PARTIAL_AFTER = re.compile(rf"{_BREAK}[{_B64}]{{1,76}}={{0,2}}(?=[ \t]*(?:[\r\n\\\"'`,;)\]}}]|$))")
_SPLIT = re.compile(_BREAK)
_SHORTEST_RUN = 2 * 64 + 1
_MIXED = re.compile(r"(?=.*[A-Z])(?=.*[a-z])(?=.*[G-Zg-z+/])")
_ARMOUR_BEFORE = re.compile(r"-----(?:\s|\\[rn])*\Z")
_ARMOUR_AFTER = re.compile(r"(?:\s|\\[rn]|=)*-----")


def tails(text: str, hits: list[tuple[int, int, str]]) -> list[Span]:
    """Key bodies that end at an END line no hit covers, each with its END line."""
    if "-----END" not in text:
        return []
    found: list[Span] = []
    floor = i = hit_end = 0  # hits are ordered: `hit_end` is where those before `start` end
    for end in PRIVATE_KEY_END.finditer(text):
        start = end.start()
        while i < len(hits) and hits[i][0] <= start:
            hit_end, i = max(hit_end, hits[i][1]), i + 1
        if hit_end <= start:  # no hit covers this END line (its BEGIN line's does)
            body = _body_start(text, max(floor, start - PRIVATE_KEY_WINDOW, hit_end), start)
            if body < start:
                found.append((body, end.end()))
        floor = end.end()
    return found


def bare_runs(text: str) -> list[Span]:
    """Runs of PEM-wide base64 lines with neither a BEGIN nor an END line."""
    if len(text) < _SHORTEST_RUN or ("\n" not in text and "\\n" not in text):
        return []
    found: list[Span] = []
    first = _RUN_AT_START.match(text)
    pos = first.end() if first else 0
    runs = [m for r, brk in _RUNS if brk in text for m in r.finditer(text, pos)]
    for m in ([first] if first else []) + runs:
        if _a_key_body(m.group("lines")):
            span = _with_partial_lines(text, m.start("lines"), m.end("lines"))
            if not _armoured(text, *span):
                found.append(span)
    return found


def _body_start(text: str, low: int, end: int) -> int:
    """Where the base64 lines that end at `end` (an END line) begin; `end` if none do."""
    words = [m.span() for m in _WORD.finditer(text, low, end)]
    start = end
    for i in range(len(words) - 1, -1, -1):
        s, e = words[i]
        after = text[e:start]
        if not _blank(after.lstrip("=")) or _breaks(after) > 1:
            break
        before = text[words[i - 1][1] if i else low : s]
        first = i == 0 or not _blank(before)  # the text's first word, or one after a prefix
        if not (start == end or e - s >= _FULL_LINE or first):
            break
        start = s
        if first:
            break
    return start


def _a_key_body(lines: str) -> bool:
    """Full lines of one width, each of mixed case and not hex (digests, ids, words are not)."""
    full = _SPLIT.split(lines)
    return len({len(line) for line in full}) == 1 and all(_MIXED.match(line) for line in full)


def _with_partial_lines(text: str, start: int, end: int) -> Span:
    """A run with the partial line before it (a cut mid-line) and the last line after it."""
    before = _PARTIAL_BEFORE.search(text, max(0, start - 120), start)
    after = _PARTIAL_AFTER.match(text, end)
    return (before.start() if before else start), (after.end() if after else end)


def _armoured(text: str, start: int, end: int) -> bool:
    """Between the armour lines of something else (a certificate, a public key)."""
    before = text[max(0, start - 40) : start]
    return bool(_ARMOUR_BEFORE.search(before) or _ARMOUR_AFTER.match(text, end))


def _blank(gap: str) -> bool:
    return not gap.replace("\\n", "").replace("\\r", "").strip()


def _breaks(gap: str) -> int:
    return gap.count("\n") + gap.count("\\n")
