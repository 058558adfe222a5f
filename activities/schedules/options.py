"""A schedule's options checked before anything is created: cron, interval, zone and overlap.

Each check refuses with one SCHEDULE_INVALID error naming the option, the bad value and the expected
form (issue 17: one clear error each, exit 2, nothing created). The cron check is written here
because no locked dependency parses cron expressions.
"""

import re
import zoneinfo
from datetime import timedelta

from temporalio.client import ScheduleOverlapPolicy

from schemas.errors import ErrorCode, ForgeError

__all__ = [
    "OVERLAP",
    "check_cron",
    "check_zone",
    "overlap_policy",
    "parse_duration",
]


# --- durations (--every, --catchup-window) --------------------------------------------------

_DURATION_FORM = "a positive duration such as 30s, 15m, 1h, 2d, 1w or 1h30m"
_DURATION = re.compile("".join(f"(?:([0-9]+){unit})?" for unit in "wdhms"))
_DURATION_UNITS = ("weeks", "days", "hours", "minutes", "seconds")


def parse_duration(option: str, text: str) -> timedelta:
    """`1h30m` -> timedelta(hours=1, minutes=30); units w d h m s, largest first, each once."""
    match = _DURATION.fullmatch(text.strip())
    if not text.strip() or match is None:
        raise ForgeError(
            f"{option} {text!r} is not {_DURATION_FORM}", code=ErrorCode.SCHEDULE_INVALID
        )
    parts = {unit: int(n) for unit, n in zip(_DURATION_UNITS, match.groups(), strict=True) if n}
    try:
        duration = timedelta(**parts)
    except OverflowError:
        raise ForgeError(
            f"{option} {text!r} is too long; expected {_DURATION_FORM}",
            code=ErrorCode.SCHEDULE_INVALID,
        ) from None
    if duration <= timedelta(0):
        raise ForgeError(
            f"{option} {text!r} is zero; expected {_DURATION_FORM}", code=ErrorCode.SCHEDULE_INVALID
        )
    return duration


# --- time zones (--tz) ----------------------------------------------------------------------

_ZONE_FORM = "an IANA time zone name, e.g. Europe/Berlin, UTC"


def check_zone(text: str) -> str:
    """The IANA zone name `text`, if the tz database has it; refused otherwise."""
    name = text.strip()
    if not name:
        raise ForgeError(f"--tz is empty; expected {_ZONE_FORM}", code=ErrorCode.SCHEDULE_INVALID)
    # ZoneInfo would also open a file path; a schedule's zone must be a name.
    if name.startswith(("/", ".")) or ".." in name or "\\" in name:
        raise ForgeError(
            f"--tz {text!r} is a path, not a zone; expected {_ZONE_FORM}",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ForgeError(
            f"--tz {text!r} is not a known zone; {_zone_hint(name)}",
            code=ErrorCode.SCHEDULE_INVALID,
        ) from None
    return name


def _zone_hint(name: str) -> str:
    folded = name.casefold().replace(" ", "_")
    matches = sorted(z for z in zoneinfo.available_timezones() if z.casefold() == folded)
    return f"did you mean {matches[0]}?" if matches else f"expected {_ZONE_FORM}"


# --- overlap (--overlap) --------------------------------------------------------------------

OVERLAP: dict[str, ScheduleOverlapPolicy] = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer-one": ScheduleOverlapPolicy.BUFFER_ONE,
    "buffer-all": ScheduleOverlapPolicy.BUFFER_ALL,
    "cancel-other": ScheduleOverlapPolicy.CANCEL_OTHER,
    "terminate-other": ScheduleOverlapPolicy.TERMINATE_OTHER,
    "allow-all": ScheduleOverlapPolicy.ALLOW_ALL,
}


def overlap_policy(text: str) -> ScheduleOverlapPolicy:
    """The policy for `--overlap TEXT` (skip, buffer-one, ...)."""
    policy = OVERLAP.get(text.strip().lower())
    if policy is None:
        raise ForgeError(
            f"--overlap {text!r} is not one of {', '.join(OVERLAP)}",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    return policy


# --- cron (--cron) --------------------------------------------------------------------------

_CRON_FORM = (
    "five fields (minute hour day-of-month month day-of-week), e.g. '30 6 * * MON-FRI', "
    "or one of @hourly, @daily, @weekly, @monthly, @yearly"
)
_DIGITS = re.compile("[0-9]+")
_SHORTCUTS = frozenset({"@hourly", "@daily", "@weekly", "@monthly", "@yearly"})
_MONTHS = ("JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC")
_WEEKDAYS = ("SUN", "MON", "TUE", "WED", "THU", "FRI", "SAT")
# (name, lowest, highest, names numbered from lowest); 7 is Sunday too, as in standard cron.
_FIELDS: tuple[tuple[str, int, int, tuple[str, ...]], ...] = (
    ("minute", 0, 59, ()),
    ("hour", 0, 23, ()),
    ("day-of-month", 1, 31, ()),
    ("month", 1, 12, _MONTHS),
    ("day-of-week", 0, 7, _WEEKDAYS),
)


def check_cron(expr: str) -> str:
    """`expr` with its whitespace normalised, if it is a standard 5-field cron expression."""
    text = " ".join(expr.split())
    if not text:
        raise ForgeError(f"--cron is empty; expected {_CRON_FORM}", code=ErrorCode.SCHEDULE_INVALID)
    if text.startswith("@"):
        if text.lower().startswith("@every"):
            raise ForgeError(
                f"--cron {expr!r} is an interval; give it with --every instead",
                code=ErrorCode.SCHEDULE_INVALID,
            )
        if text.lower() not in _SHORTCUTS:
            raise ForgeError(
                f"--cron {expr!r} is not a known shortcut; expected {_CRON_FORM}",
                code=ErrorCode.SCHEDULE_INVALID,
            )
        return text.lower()
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        raise ForgeError(
            f"--cron {expr!r} names a zone; give it with --tz instead",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    fields = text.split(" ")
    if len(fields) != len(_FIELDS):
        raise ForgeError(
            f"--cron {expr!r} has {len(fields)} field(s); expected {_CRON_FORM}",
            code=ErrorCode.SCHEDULE_INVALID,
        )
    for value, field in zip(fields, _FIELDS, strict=True):
        problem = _field_problem(value, *field[1:])
        if problem:
            raise ForgeError(
                f"--cron {expr!r}: the {field[0]} field {problem}", code=ErrorCode.SCHEDULE_INVALID
            )
    return text


def _field_problem(value: str, low: int, high: int, names: tuple[str, ...]) -> str | None:
    """Why one cron field is wrong, or None: a comma list of `*`, n, a-b, each with /step."""
    allowed = f"{low}-{high}" + (f" or {names[0]}-{names[-1]}" if names else "")
    for item in value.split(","):
        base, slash, step = item.partition("/")
        if slash and not (_DIGITS.fullmatch(step) and int(step) > 0):
            return f"has step {step!r}; a step is a positive number, as in */15"
        if base == "*":
            continue
        start_text, dash, end_text = base.partition("-")
        if slash and not dash:
            return f"has {item!r}; a step follows * or a range, as in */2 or 1-10/2"
        start = _number(start_text, low, high, names)
        end = _number(end_text, low, high, names) if dash else start
        if start is None or end is None:
            return f"has {base!r}; allowed: numbers {allowed}, *, a-b, lists a,b and steps /n"
        if start > end:
            return f"has range {base!r} whose start is after its end"
    return None


def _number(text: str, low: int, high: int, names: tuple[str, ...]) -> int | None:
    if text.upper() in names:
        return low + names.index(text.upper())
    if _DIGITS.fullmatch(text) and low <= int(text) <= high:
        return int(text)
    return None
