"""L3's inner loop: the detector hits in one string or one integer.

One alternation of the chosen detectors is searched; a candidate that fails its check does
not swallow the text after it: the other detectors are tried at the same position and the
search resumes one character later ("XX00 AKIAIOSFODNN7EXAMPLE" is a failed IBAN, then an
AWS key). A private key's END marker is found among the text's END markers (listed once
per string, then looked up by bisection), so repeated BEGIN headers cost linear time.

Some secrets are found by their body, where the part that names them is missing or split:
a key's base64 before its END line (secrets/pem.py), a JWT wrapped onto several lines
(secrets/jwts.py), a 40-character AWS secret next to its key id (`aws_secrets_by_ids`). A
text that may have been cut before it arrived (`cut`: the masker's case, a stderr tail or a
failure's last lines) is also searched for a key body with neither armour line and for a
JWT's first or last part. Such a hit takes in any smaller hit it overlaps.
"""

import re
from bisect import bisect_left, bisect_right
from functools import cache
from typing import Any

from compiler.ladder.detectors import (
    CONFIRM,
    HINTS,
    PATTERNS,
    PREFILTER,
    PRIVATE_KEY_BODY,
    PRIVATE_KEY_END,
    PRIVATE_KEY_WINDOW,
    aws_secret_under_key,
    aws_secrets_by_ids,
    bare_ssn,
    card_length,
    card_valid,
    compile_detectors,
    nanp_valid,
    ssn_valid,
    value_span,
)
from compiler.ladder.secrets.allow import forge_value, placeholder
from compiler.ladder.secrets.engine import SecretScanner, entropy
from compiler.ladder.secrets.jwts import jwt_spans
from compiler.ladder.secrets.pem import bare_runs, tails

Hit = tuple[int, int, str]  # start, end, detector
_SHORTEST = 6  # no detector matches fewer characters
_MAX_VERDICTS = 4096  # checksum results remembered per string
_BARE_PHONE = re.compile(r"(?<![\w+])\+?\d[\d ().-]{6,22}\d(?![\w])")
_FIELD_SECRET = re.compile(r"\S{8,500}")  # one token: a sentence under `auth_note` is prose
_FIELD_ENTROPY = 3.0


@cache
def secret_scanner() -> SecretScanner:
    """The credential rules, compiled once per process (about half a second)."""
    return SecretScanner()


class Detectors:
    """The chosen detectors, compiled once per contract (`cut`: see the module's docstring)."""

    def __init__(self, names: tuple[str, ...], *, cut: bool = False) -> None:
        self.names = frozenset(names)
        self.cut = cut
        self._keys, self._aws = "private_key" in self.names, "aws_key" in self.names
        self.kinds = [n for n in PATTERNS if n in self.names]
        self.pattern = compile_detectors(names)
        self.singles = {n: re.compile(PATTERNS[n]) for n in self.kinds}
        self.secrets = secret_scanner() if "credential" in self.names else None

    def quick(self, text: str) -> bool:
        """Whether `text` may hold anything (False: it certainly holds no pattern's match)."""
        return PREFILTER.search(text) is not None or (
            self.secrets is not None and (self.secrets.any(text) or _wrapped_jwt(text))
        )

    def text(self, text: str, key: str | None = None) -> list[Hit]:
        """Every confirmed hit in a string, in order; `key` is the field name it sits under."""
        if len(text) < _SHORTEST:
            return []
        hits = self._search(text) if PREFILTER.search(text) is not None else []
        if self.secrets is not None:
            found = self.secrets.find(text)
            if found:
                # "user:password@host" reads as an email too: there, the credential wins.
                hits = [h for h in hits if h[2] != "email" or not _overlaps(h, found)]
                hits = sorted(hits + [h for h in found if not _overlaps(h, hits)])
        if key is not None:
            extra = self._hinted(text, key)
            if extra:
                hits = sorted(hits + [h for h in extra if not _overlaps(h, hits)])
        return self._bodies(text, hits)

    def number(self, value: int, key: str | None = None) -> str | None:
        """The detector an integer's decimal form matches (cards, phones, SSNs), if any."""
        digits = str(abs(value))
        if len(digits) < 8:
            return None
        if "card" in self.names and card_valid(digits):
            return "card"
        if "phone" in self.names:
            if len(digits) == 11 and digits[0] == "1" and nanp_valid(digits[1:]):
                return "phone"  # E.164 without its "+": 14155550132
            if key is not None and HINTS["phone"].search(key) and len(digits) <= 15:
                return "phone"
        if "us_ssn" in self.names and key is not None and HINTS["us_ssn"].search(key):
            if len(digits) <= 9 and ssn_valid(digits.zfill(9)):
                return "us_ssn"
        return None

    def _hinted(self, text: str, key: str) -> list[Hit]:
        """What a field name says is sensitive.

        Bare digit runs under ssn or phone fields, and a random single-token value under a
        field named for a secret (password, api_token, client_secret, ...).
        """
        hits: list[Hit] = []
        if (
            "secret_field" in self.names
            and HINTS["secret_field"].search(key)
            and not aws_secret_under_key(key, text)  # the guard names that one itself
        ):
            value = text.strip()
            if (
                _FIELD_SECRET.fullmatch(value)
                and entropy(value) >= _FIELD_ENTROPY
                and not placeholder(value)
                and not forge_value(value)
            ):
                start = text.index(value)
                hits.append((start, start + len(value), "secret_field"))
        if "us_ssn" in self.names and HINTS["us_ssn"].search(key):
            hits += [(s, e, "us_ssn") for s, e in bare_ssn(text)]
        if "phone" in self.names and HINTS["phone"].search(key):
            for m in _BARE_PHONE.finditer(text):
                if 8 <= sum(c.isdigit() for c in m.group(0)) <= 15:
                    hits.append((m.start(), m.end(), "phone"))
        return hits

    def _bodies(self, text: str, hits: list[Hit]) -> list[Hit]:
        """`hits` with the secrets found by their body (see the module's docstring).

        Each search runs only where the text holds what it needs, checked with `in` first:
        most strings hold no line break, no "-----END", no "ey" and no key id.
        """
        extra: list[Hit] = []
        lines = "\n" in text or "\\n" in text
        if self._keys and "-----END" in text:
            extra += [(s, e, "private_key") for s, e in tails(text, hits)]
        if self._keys and self.cut and lines:
            extra += [(s, e, "private_key") for s, e in bare_runs(text)]
        if self.secrets is not None and (self.cut or _wrapped_jwt(text)):
            extra += [(s, e, "jwt") for s, e in jwt_spans(text, cut=self.cut)]
        if self._aws:
            extra += [(s, e, "aws_secret") for s, e in aws_secrets_by_ids(text)]
        return _absorb(hits, extra) if extra else hits

    def _search(self, text: str) -> list[Hit]:
        hits: list[Hit] = []
        ends: list[tuple[int, int]] | None = None  # private key END markers, found on demand
        verdicts: dict[tuple[str, str], int] = {}  # hostile text repeats one failing candidate
        pos = 0
        while (m := self.pattern.search(text, pos)) is not None:
            kind = _kind(m)
            if kind == "private_key":
                if ends is None:
                    ends = [e.span() for e in PRIVATE_KEY_END.finditer(text)]
                span: tuple[int, int] | None = (m.start(), _key_end(text, m.end(), ends))
            else:
                span = _confirmed(kind, m, verdicts)
            if span is None:
                found = self._others(text, m.start(), kind, verdicts)
                if found is None:
                    pos = m.start() + 1
                    continue
                kind, span = found
            hits.append((span[0], span[1], kind))
            pos = max(span[1], m.start() + 1)
        return hits

    def _others(
        self, text: str, start: int, failed: str, verdicts: dict[tuple[str, str], int]
    ) -> tuple[str, tuple[int, int]] | None:
        """A later detector that matches (and checks out) where `failed` did not."""
        for kind in self.kinds[self.kinds.index(failed) + 1 :]:
            m = self.singles[kind].match(text, start)
            if m is not None and kind != "private_key":
                span = _confirmed(kind, m, verdicts)
                if span is not None:
                    return kind, span
        return None


def _kind(m: re.Match[str]) -> str:
    if m.lastgroup in PATTERNS:
        return m.lastgroup
    return next(k for k in PATTERNS if k in m.re.groupindex and m.group(k) is not None)


def _confirmed(
    kind: str, m: re.Match[str], verdicts: dict[tuple[str, str], int]
) -> tuple[int, int] | None:
    found = m.group(0)
    if kind == "card":
        length = _card_length(found, verdicts)
        return (m.start(), m.start() + length) if length else None
    confirm = CONFIRM.get(kind)
    if confirm is not None:
        verdict = verdicts.get((kind, found))
        if verdict is None:
            verdict = confirm(found)
            if len(verdicts) < _MAX_VERDICTS:
                verdicts[kind, found] = verdict
        if not verdict:
            return None
    start, end = value_span(kind, found)
    return m.start() + start, m.start() + end


def _card_length(found: str, verdicts: dict[tuple[str, str], int]) -> int:
    length = verdicts.get(("card", found))
    if length is None:
        length = card_length(found)
        if len(verdicts) < _MAX_VERDICTS:
            verdicts["card", found] = length
    return length


def _key_end(text: str, header_end: int, ends: list[tuple[int, int]]) -> int:
    """Where a private key block that starts before `header_end` ends."""
    i = bisect_left(ends, (header_end, 0))
    if i < len(ends) and ends[i][0] - header_end <= PRIVATE_KEY_WINDOW:
        return ends[i][1]
    body = PRIVATE_KEY_BODY.match(text, header_end)  # no END: the base64 body that follows
    return body.end() if body is not None else header_end


def _wrapped_jwt(text: str) -> bool:
    """A JWT's header ('{"' in base64url) in a text with line breaks: a token a log wrapped."""
    return ("eyJ" in text or "eyAi" in text) and ("\n" in text or "\\n" in text)


def _overlaps(hit: Hit, hits: list[Hit]) -> bool:
    return any(hit[0] < e and s < hit[1] for s, e, _ in hits)


def _inside(hit: Hit, hits: list[Hit], starts: list[int]) -> bool:
    """Whether `hit` lies within one of `hits` (ordered, none overlapping)."""
    i = bisect_right(starts, hit[0]) - 1
    return i >= 0 and hit[1] <= hits[i][1]


def _absorb(hits: list[Hit], extra: list[Hit]) -> list[Hit]:
    """`hits` and `extra` as one ordered list without overlaps.

    An extra hit inside one hit adds nothing (a one-line JWT is already a bearer token); one
    that overlaps hits takes them in, so no part of what either found is left in the open.
    """
    starts = [s for s, _, _ in hits]
    extra = [x for x in extra if not _inside(x, hits, starts)]
    if not extra:
        return hits
    merged: list[list[Any]] = []
    for start, end, kind, found_by_body in sorted(
        [(s, e, k, False) for s, e, k in hits] + [(s, e, k, True) for s, e, k in extra]
    ):
        if merged and start < merged[-1][1]:
            last = merged[-1]
            last[1] = max(last[1], end)
            if found_by_body and not last[3]:
                last[2], last[3] = kind, True
        else:
            merged.append([start, end, kind, found_by_body])
    return [(s, e, k) for s, e, k, _ in merged]
