"""The patterns L3 looks for, with the checksums that keep false positives down.

Every quantifier is bounded, so no input can make a pattern backtrack for long; the
candidates a pattern finds are confirmed by a checksum (Luhn for cards, ISO 7064 mod 97
for IBANs) or by the issuing rules (SSN areas, card prefixes) before they count.
"""

import re
from collections.abc import Callable

_B = r"(?<![A-Za-z0-9_])"  # a token boundary that, unlike \b, also works before "-" or "+"
_E = r"(?![A-Za-z0-9_])"

PATTERNS: dict[str, str] = {
    "private_key": r"-----BEGIN (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----"
    r"(?:[\s\S]{0,20000}?-----END (?:[A-Z0-9]{1,12} ){0,3}PRIVATE KEY(?: BLOCK)?-----)?",
    "anthropic_key": _B + r"sk-ant-[A-Za-z0-9_-]{20,300}",
    "openai_key": _B + r"sk-(?!ant-)(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,300}",
    "aws_key": _B + r"(?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16}" + _E,
    "github_token": _B
    + r"(?:(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})",
    "slack_token": _B + r"(?:xox[abposr]-[A-Za-z0-9-]{10,250}|hooks\.slack\.com/services/"
    r"T[A-Z0-9]{4,20}/B[A-Z0-9]{4,20}/[A-Za-z0-9]{8,64})",
    "bearer_token": _B + r"[Bb]earer[ \t]{1,5}[A-Za-z0-9\-._~+/]{16,2000}={0,2}",
    "email": _B + r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63}){0,8}"
    r"\.[A-Za-z]{2,24}" + _E,
    "us_ssn": _B + r"(?!000|666|9\d\d)\d{3}-(?!00)\d{2}-(?!0000)\d{4}" + _E,
    "iban": _B + r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,4})?" + _E,
    "card": _B + r"\d(?:[ -]?\d){12,18}" + _E,
    # NANP (415) 555-0132 / 415-555-0132, international +44 20 7946 0958, E.164 +14155550132
    "phone": r"(?<![\w+.])(?:\+\d{1,3}[ .-]?(?:\(\d{1,4}\)[ .-]?)?\d{1,4}(?:[ .-]\d{2,4}){1,4}"
    r"|(?:\(\d{3}\)[ .]?|\d{3}[.-])\d{3}[.-]\d{4}|\+[1-9]\d{7,14})(?![\w]|\.\d)",
}
LABELS = {
    "private_key": "private key block",
    "anthropic_key": "Anthropic API key",
    "openai_key": "OpenAI API key",
    "aws_key": "AWS access key id",
    "github_token": "GitHub token",
    "slack_token": "Slack token",
    "bearer_token": "bearer token",
    "email": "email address",
    "us_ssn": "US social security number",
    "iban": "IBAN",
    "card": "payment card number",
    "phone": "phone number",
}
_AWS_SECRET = re.compile(r"[A-Za-z0-9/+=]{40}")


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


def _card(match: str) -> bool:
    digits = re.sub(r"[ -]", "", match)
    return 13 <= len(digits) <= 19 and _card_prefix(digits) and luhn(digits)


def iban_valid(match: str) -> bool:
    """ISO 13616: length 15-34 and the mod-97 check over the rearranged characters."""
    text = match.replace(" ", "")
    if not 15 <= len(text) <= 34:
        return False
    moved = text[4:] + text[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1


def _phone(match: str) -> bool:
    digits = sum(c.isdigit() for c in match)
    return 8 <= digits <= 15


CONFIRM: dict[str, Callable[[str], bool]] = {"card": _card, "iban": iban_valid, "phone": _phone}


# Something every detector's match contains; a string without any is skipped outright. It
# starts with few distinct characters, so the regex engine skips most positions quickly.
PREFILTER = re.compile(
    r"@|\d[\d ().+-]{6,}|[A-Z]{2}\d{2}|sk-|A[KSB]IA|ACCA|gh[pousr]_|github_pat_|xox[abposr]-"
    r"|hooks\.slack|PRIVATE KEY|[Bb]earer"
)


def compile_detectors(names: tuple[str, ...]) -> re.Pattern[str]:
    """One alternation of the chosen detectors, each as a named group, most specific first."""
    chosen = [n for n in PATTERNS if n in names]
    return re.compile("|".join(f"(?P<{n}>{PATTERNS[n]})" for n in chosen))


def aws_secret_under_key(key: str, value: str) -> bool:
    """An AWS secret access key is 40 base64 characters; only its field name gives it away."""
    lowered = key.lower()
    return "aws" in lowered and "secret" in lowered and bool(_AWS_SECRET.fullmatch(value.strip()))


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
    return f"{text[:3]}***({len(text)} chars)"
