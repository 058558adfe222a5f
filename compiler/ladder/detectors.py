"""The patterns L3 looks for, with the checksums that keep false positives down.

Every quantifier is bounded, so no input can make a pattern backtrack for long; the
candidates a pattern finds are confirmed by a checksum (Luhn for cards, ISO 7064 mod 97
for IBANs, CRC32 for GitHub tokens) or by the issuing rules (SSN areas, card prefixes, NANP
area codes) before they count. A private key is found by its BEGIN header; its END marker is
looked up with `str.find` (see `scan`), never by a lazy regex that would rescan the text per
header.

Bare digit runs are ambiguous, so they are only reported where the evidence is strong: a
9-digit SSN without separators only after "SSN"/"social security" in the text or under a
field whose name says so (`HINTS`); an unformatted 10-digit phone number only when it is a
valid NANP number (area and exchange codes 2-9, not N11).
"""

import re
from collections.abc import Callable

from compiler.ladder.secrets.allow import placeholder as example_or_placeholder
from compiler.ladder.secrets.checksums import github_checksum_valid

_B = r"(?<![A-Za-z0-9_])"  # a token boundary that, unlike \b, also works before "-" or "+"
_BP = r"(?<![A-Za-z0-9])"  # for secrets with a distinctive prefix: "key_sk-ant-..." counts
_E = r"(?![A-Za-z0-9_])"
_SSN = r"(?!000|666|9\d\d)\d{3}(?P<ssn_sep>[- ])(?!00)\d{2}(?P=ssn_sep)(?!0000)\d{4}"
_SSN_WORD = r"(?:[Ss][Ss][Nn]|[Ss]ocial [Ss]ecurity(?: [Nn](?:umber|o\.?))?)"

PATTERNS: dict[str, str] = {
    "private_key": r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----",
    "anthropic_key": _BP + r"sk-ant-[A-Za-z0-9_-]{20,300}",
    "openai_key": _BP + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}",
    "aws_key": _BP + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _E,
    "github_token": _BP
    + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    "slack_token": _BP + r"(?:xox[abposre]-[A-Za-z0-9-]{10,250}|xapp-\d-[A-Za-z0-9-]{10,250}"
    r"|hooks\.slack\.com/services/T[A-Z0-9]{4,20}/B[A-Z0-9]{4,20}/[A-Za-z0-9]{8,64})",
    "bearer_token": _B + r"[Bb][Ee][Aa][Rr][Ee][Rr][ \t]{1,5}[A-Za-z0-9\-._~+/]{16,2000}={0,2}",
    "email": _B + r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}" + _E,
    "us_ssn": _B + r"(?:" + _SSN + r"|" + _SSN_WORD + r"[ \t]{0,3}[:#=]?[ \t]{0,3}\d{9})" + _E,
    "iban": _B + r"[A-Za-z]{2}\d{2}(?:[ -]?[A-Za-z0-9]{4}){2,7}(?:[ -]?[A-Za-z0-9]{1,4})?" + _E,
    "card": _B + r"[2-6](?:[ -]?\d){12,18}" + _E,  # issuers' numbers start with 2-6
    # NANP (415) 555-0132 / 415-555-0132 / 415 555 0132 / 4155550132, international
    # +44 20 7946 0958, E.164 +14155550132
    "phone": r"(?<![\w+.])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}"
    r"|(?:\(\d{3}\)[ .-]?|\d{3}[ .-]?)\d{3}[ .-]?\d{4}|\+[1-9]\d{7,14})(?![\w]|\.\d)",
}
LABELS = {
    "private_key": "private key block",
    "anthropic_key": "Anthropic API key",
    "openai_key": "OpenAI API key",
    "aws_key": "AWS access key id",
    "aws_secret": "AWS secret access key",
    "github_token": "GitHub token",
    "slack_token": "Slack token",
    "bearer_token": "bearer token",
    "email": "email address",
    "us_ssn": "US social security number",
    "iban": "IBAN",
    "card": "payment card number",
    "phone": "phone number",
    "secret_field": "secret-looking value of a credential field",
}
# Field names that make a bare number mean something ("ssn": 78051120, "phone": 4155550132).
HINTS: dict[str, re.Pattern[str]] = {
    "us_ssn": re.compile(r"ssn|social", re.IGNORECASE),
    "phone": re.compile(r"phone|mobile|cell|tel|fax", re.IGNORECASE),
    # not a bare "key": step_key, call_key and idempotency keys are Forge's own identifiers
    "secret_field": re.compile(
        r"passw|passphrase|pwd|secret|token(?!s?_?(?:count|used|limit|budget|in|out))"
        r"|api[_-]?key|access[_-]?key|private[_-]?key|credential|auth(?!or)",
        re.IGNORECASE,
    ),
}
PRIVATE_KEY_END = re.compile(r"-----END (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----")
PRIVATE_KEY_BODY = re.compile(r"[A-Za-z0-9+/=\s]{0,20000}")
PRIVATE_KEY_WINDOW = 20_000
REDACTED = "[REDACTED:"  # how every placeholder the guard writes starts
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+=]{40}")
_AWS_ID = re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}(?![A-Z0-9])")
_AWS_SECRET_TOKEN = re.compile(r"(?<![A-Za-z0-9/+=])[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])")
_AWS_SECRET_MIXED = re.compile(r"(?=.*[A-Z])(?=.*[a-z])(?=.*[G-Zg-z/+])")
_B64_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=")
_AWS_SECRET_DISTINCT = 20  # 40 random base64 characters hold about 30 distinct ones
AWS_PAIR_DISTANCE = 100  # characters between a key id and its secret (gitleaks: same line)
_BARE_SSN = re.compile(r"(?<!\d)\d{3}[- ]?\d{2}[- ]?\d{4}(?!\d)")
# ISO 13616 country codes that issue IBANs (SWIFT IBAN registry).
_IBAN_COUNTRIES = frozenset(
    "AD AE AL AT AZ BA BE BG BH BI BR BY CH CR CY CZ DE DJ DK DO EE EG ES FI FK FO FR GB GE "
    "GI GL GR GT HR HU IE IL IQ IS IT JO KW KZ LB LC LI LT LU LV LY MC MD ME MK MN MR MT MU "
    "NI NL NO OM PK PL PS PT QA RO RS RU SA SC SD SE SI SK SM SO ST SV TL TN TR UA VA VG XK "
    "YE".split()
)


def luhn(digits: str) -> bool:
    """The Luhn checksum of a string of digits."""
    total = 0
    for position, char in enumerate(reversed(digits)):
        n = int(char)
        if position % 2:
            n = n * 2 - 9 if n > 4 else n * 2
        total += n
    return total % 10 == 0


def _card_prefix(d: str) -> bool:
    two, four = int(d[:2]), int(d[:4])
    return (
        d[0] == "4"
        or 51 <= two <= 55
        or 2221 <= four <= 2720
        or two in (34, 37, 36, 38, 62, 65)
        or d[:4] == "6011"
        or 644 <= int(d[:3]) <= 649
        or 300 <= int(d[:3]) <= 305
        or 3528 <= four <= 3589
    )


def card_valid(digits: str) -> bool:
    """A payment card number: 13-19 digits, an issuer prefix and the Luhn checksum."""
    return 13 <= len(digits) <= 19 and _card_prefix(digits) and luhn(digits)


def _card(match: str) -> bool:
    return card_valid(match.replace(" ", "").replace("-", ""))


def card_length(match: str) -> int:
    """How much of a card-shaped run is a card: all, a prefix ending at a separator, or 0.

    "4111 1111 1111 1111 202" is a card followed by other digits.
    """
    if _card(match):
        return len(match)
    for cut in range(len(match) - 1, 12, -1):
        if match[cut] in " -" and _card(match[:cut]):
            return cut
    return 0


def iban_valid(match: str) -> bool:
    """ISO 13616: a known country, length 15-34 and the mod-97 check."""
    text = re.sub(r"[ -]", "", match).upper()
    if not 15 <= len(text) <= 34 or text[:2] not in _IBAN_COUNTRIES:
        return False
    moved = text[4:] + text[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def nanp_valid(digits: str) -> bool:
    """A 10-digit North American number: area and exchange start 2-9 and are not N11."""
    if len(digits) != 10:
        return False
    area, exchange = digits[:3], digits[3:6]
    return all(p[0] in "23456789" and p[1:] != "11" for p in (area, exchange)) and area[1] != "9"


def _phone(match: str) -> bool:
    digits = "".join(c for c in match if c.isdigit())
    if not 8 <= len(digits) <= 15:
        return False
    if "+" in match or "(" in match or "-" in match or "." in match:
        return True
    return nanp_valid(digits)  # bare or space-separated digits: only a valid NANP number


def ssn_valid(digits: str) -> bool:
    """SSA issuing rules: area not 000, 666 or 9xx; group not 00; serial not 0000."""
    return (
        len(digits) == 9
        and digits[:3] not in ("000", "666")
        and digits[0] != "9"
        and digits[3:5] != "00"
        and digits[5:] != "0000"
    )


def _ssn(match: str) -> bool:
    return ssn_valid("".join(c for c in match[-11:] if c.isdigit())[-9:])


def _not_an_example(match: str) -> bool:
    """A credential that is no documented example or placeholder (AKIAIOSFODNN7EXAMPLE)."""
    return not example_or_placeholder(match.split()[-1])


def _github(match: str) -> bool:
    """A GitHub token: no example, and its CRC32 checksum matches where it has one."""
    return _not_an_example(match) and github_checksum_valid(match)


CONFIRM: dict[str, Callable[[str], bool]] = {
    "iban": iban_valid,
    "phone": _phone,
    "us_ssn": _ssn,
    **{
        kind: _not_an_example
        for kind in (
            "anthropic_key",
            "openai_key",
            "aws_key",
            "slack_token",
            "bearer_token",
        )
    },
    "github_token": _github,
}


def value_span(kind: str, match: str) -> tuple[int, int]:
    """The part of a confirmed match that is the sensitive value ("SSN: 078051120" -> digits)."""
    if kind == "us_ssn" and not match[:1].isdigit():
        return len(match) - 9, len(match)
    return 0, len(match)


# Something every detector's match contains; a string without any is skipped outright. It
# starts with few distinct characters, so the regex engine skips most positions quickly.
PREFILTER = re.compile(
    r"@|\d[\d ().+-]{6,}|[A-Za-z]{2}\d{2}|sk-|A[KSB]IA|ACCA|gh[pousr]_|github_pat_"
    r"|xox[abposre]-|xapp-|hooks\.slack|PRIVATE KEY|[Bb][Ee][Aa][Rr][Ee][Rr]"
)


def compile_detectors(names: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of the chosen detectors, each as a named group, most specific first."""
    chosen = [n for n in PATTERNS if n in names]
    return re.compile("|".join(f"(?P<{n}>{PATTERNS[n]})" for n in chosen))


def bare_ssn(text: str) -> list[tuple[int, int]]:
    """Spans of 9-digit SSNs (separators optional) in a field whose name says SSN."""
    return [
        m.span()
        for m in _BARE_SSN.finditer(text)
        if ssn_valid("".join(c for c in m.group(0) if c.isdigit()))
    ]


def aws_secret_under_key(key: str, value: str) -> bool:
    """An AWS secret access key is 40 base64 characters; only its field name gives it away."""
    lowered, value = key.lower(), value.strip()
    return (
        "aws" in lowered
        and "secret" in lowered
        and bool(_AWS_SECRET.fullmatch(value))
        and not example_or_placeholder(value)
    )


def aws_secrets_by_ids(text: str) -> list[tuple[int, int]]:
    """Spans of unlabelled AWS secret access keys: 40 random characters near a key id.

    As gitleaks pairs them: "AKIA… / wJalr…" names neither, but an access key id within
    `AWS_PAIR_DISTANCE` characters says what the 40-character token next to it is.
    """
    if "IA" not in text and "ACCA" not in text:  # AKIA, ASIA, ABIA
        return []
    spans: set[tuple[int, int]] = set()
    for key_id in _AWS_ID.finditer(text):
        low = max(0, key_id.start() - AWS_PAIR_DISTANCE - 40)
        window = text[low : key_id.end() + AWS_PAIR_DISTANCE + 40]
        for m in _AWS_SECRET_TOKEN.finditer(window):
            start, end = low + m.start(), low + m.end()
            if text[start - 1 : start] in _B64_CHARS or text[end : end + 1] in _B64_CHARS:
                continue  # cut out of a longer run by the window's edge
            if _aws_secret_like(m.group(0)):
                spans.add((start, end))
    return sorted(spans)


def _aws_secret_like(value: str) -> bool:
    """Random base64: both cases, a letter outside hex, many distinct characters, no example."""
    return (
        _AWS_SECRET_MIXED.match(value) is not None
        and len(set(value)) >= _AWS_SECRET_DISTINCT
        and not example_or_placeholder(value)
    )


def label(kind: str) -> str:
    """What a detector's finding is called in reports; a credential rule by its id."""
    return LABELS.get(kind) or f"credential ({kind})"


def placeholder(kind: str) -> str:
    """What a redacted match becomes in the payload ("[REDACTED:email]")."""
    return f"{REDACTED}{'aws_key' if kind == 'aws_secret' else kind}]"


def mask(kind: str, text: str) -> str:
    """A safe stand-in for a match: enough to find it again, never enough to use it."""
    if kind == "card":
        digits = re.sub(r"\D", "", text)
        return f"card ending {digits[-4:]}"
    if kind == "email":
        local, _, domain = text.partition("@")
        return f"{local[:1]}***@***{domain[domain.rfind('.') :]}"
    if kind in ("phone", "us_ssn", "iban"):
        return "***" + text[-2:]
    if kind in PATTERNS or kind == "aws_secret":
        return f"{text[:3]}***({len(text)} chars)"
    # A credential rule's or a field's secret: its first characters may be all there is to it.
    return f"***({len(text)} chars)"
