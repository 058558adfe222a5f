"""Calendar dates in the formats L0e accepts, parsed by regex (no clock, no datetime)."""

import re
from collections.abc import Iterable

_MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("january", "jan"),
            ("february", "feb"),
            ("march", "mar"),
            ("april", "apr"),
            ("may",),
            ("june", "jun"),
            ("july", "jul"),
            ("august", "aug"),
            ("september", "sep", "sept"),
            ("october", "oct"),
            ("november", "nov"),
            ("december", "dec"),
        ),
        start=1,
    )
    for name in names
}
_D = r"(?P<d>\d{1,2})"
_M = r"(?P<m>\d{1,2})"
_Y = r"(?P<y>\d{4})"
_NAME = r"(?P<name>[A-Za-z]{3,9})\.?"
_ORD = r"(?:st|nd|rd|th)?"
FORMATS: dict[str, re.Pattern[str]] = {
    "YYYY-MM-DD": re.compile(rf"{_Y}-{_M}-{_D}"),
    "YYYY/MM/DD": re.compile(rf"{_Y}/{_M}/{_D}"),
    "YYYYMMDD": re.compile(r"(?P<y>\d{4})(?P<m>\d{2})(?P<d>\d{2})"),
    "MM/DD/YYYY": re.compile(rf"{_M}/{_D}/{_Y}"),
    "DD/MM/YYYY": re.compile(rf"{_D}/{_M}/{_Y}"),
    "DD.MM.YYYY": re.compile(rf"{_D}\.{_M}\.{_Y}"),
    "DD-MM-YYYY": re.compile(rf"{_D}-{_M}-{_Y}"),
    "MM-DD-YYYY": re.compile(rf"{_M}-{_D}-{_Y}"),
    "Month D, YYYY": re.compile(rf"{_NAME} {_D}{_ORD},? {_Y}"),
    "D Month YYYY": re.compile(rf"{_D}{_ORD} {_NAME},? {_Y}"),
}
ISO_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def days_in_month(year: int, month: int) -> int:
    """Days in a month of the proleptic Gregorian calendar."""
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _valid(year: int, month: int, day: int) -> bool:
    return 1 <= year <= 9999 and 1 <= month <= 12 and 1 <= day <= days_in_month(year, month)


def is_iso_date(text: str) -> bool:
    """Whether `text` is already a valid YYYY-MM-DD date."""
    if not ISO_DATE.fullmatch(text):
        return False
    return _valid(int(text[:4]), int(text[5:7]), int(text[8:]))


def parse_date(text: str, formats: Iterable[str]) -> set[str]:
    """Every ISO date `text` can mean under the given formats (more than one = ambiguous)."""
    found: set[str] = set()
    cleaned = " ".join(text.split())
    for name in formats:
        match = FORMATS[name].fullmatch(cleaned)
        if match is None:
            continue
        parts = match.groupdict()
        if parts.get("name") is not None:
            month = _MONTHS.get(parts["name"].lower(), 0)
        else:
            month = int(parts["m"])
        year, day = int(parts["y"]), int(parts["d"])
        if _valid(year, month, day):
            found.add(f"{year:04d}-{month:02d}-{day:02d}")
    return found
