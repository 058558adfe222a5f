"""A schedule's options checked before anything is created: cron, interval, zone and overlap.

Each check refuses with one SCHEDULE_INVALID error naming the option, the bad value and the expected
form (issue 17: one clear error each, exit 2, nothing created). The option is named as the
surface reading the error spells it (schemas/spelling.py): `--catchup-window` on the CLI,
`catchup_window` in the API's answer. The cron check is written here
because no locked dependency parses cron expressions.
"""

import re
import zoneinfo
from datetime import timedelta

from temporalio.client import ScheduleOverlapPolicy

from schemas.errors import ErrorCode, ForgeError
from schemas.spelling import Named, Spelled, literal

__all__ = [
    "OVERLAP",
    "invalid",
    "check_cron",
    "check_zone",
    "overlap_policy",
    "parse_duration",
]


def invalid(text: str, *options: str) -> ForgeError:
    """SCHEDULE_INVALID whose `{0}`, `{1}`, … are the schedule options it names."""
    return ForgeError("", code=ErrorCode.SCHEDULE_INVALID).spell(
        Spelled(text, tuple(Named("option", o) for o in options))
    )


def _q(value: str) -> str:
    return literal(repr(value))


# --- durations (--every, --catchup-window) --------------------------------------------------

_DURATION_FORM = "a positive duration such as 30s, 15m, 1h, 2d, 1w or 1h30m"
_DURATION = re.compile("".join(f"(?:([0-9]+){unit})?" for unit in "wdhms"))
_DURATION_UNITS = ("weeks", "days", "hours", "minutes", "seconds")


def parse_duration(option: str, text: str) -> timedelta:
    """`1h30m` -> timedelta(hours=1, minutes=30); units w d h m s, largest first, each once.

    `option` is the request field it came from (`every`, `catchup_window`).
    """
    match = _DURATION.fullmatch(text.strip())
    if not text.strip() or match is None:
        raise invalid(f"{{0}} {_q(text)} is not {_DURATION_FORM}", option)
    parts = {unit: int(n) for unit, n in zip(_DURATION_UNITS, match.groups(), strict=True) if n}
    try:
        duration = timedelta(**parts)
    except OverflowError:
        raise invalid(f"{{0}} {_q(text)} is too long; expected {_DURATION_FORM}", option) from None
    if duration <= timedelta(0):
        raise invalid(f"{{0}} {_q(text)} is zero; expected {_DURATION_FORM}", option)
    return duration


# --- time zones (--tz) ----------------------------------------------------------------------

_ZONE_FORM = "an IANA time zone name, e.g. Europe/Berlin, UTC"


def check_zone(text: str) -> str:
    """The IANA zone name `text`, if the tz database has it; refused otherwise."""
    name = text.strip()
    if not name:
        raise invalid(f"{{0}} is empty; expected {_ZONE_FORM}", "tz")
    # ZoneInfo would also open a file path; a schedule's zone must be a name.
    if name.startswith(("/", ".")) or ".." in name or "\\" in name:
        raise invalid(f"{{0}} {_q(text)} is a path, not a zone; expected {_ZONE_FORM}", "tz")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise invalid(
            f"{{0}} {_q(text)} is not a known zone; {literal(_zone_hint(name))}", "tz"
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
        raise invalid(f"{{0}} {_q(text)} is not one of {', '.join(OVERLAP)}", "overlap")
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
        raise invalid(f"{{0}} is empty; expected {_CRON_FORM}", "cron")
    if text.startswith("@"):
        if text.lower().startswith("@every"):
            raise invalid(
                f"{{0}} {_q(expr)} is an interval; give it with {{1}} instead", "cron", "every"
            )
        if text.lower() not in _SHORTCUTS:
            raise invalid(
                f"{{0}} {_q(expr)} is not a known shortcut; expected {_CRON_FORM}", "cron"
            )
        return text.lower()
    if text.upper().startswith(("TZ=", "CRON_TZ=")):
        raise invalid(f"{{0}} {_q(expr)} names a zone; give it with {{1}} instead", "cron", "tz")
    fields = text.split(" ")
    if len(fields) != len(_FIELDS):
        raise invalid(f"{{0}} {_q(expr)} has {len(fields)} field(s); expected {_CRON_FORM}", "cron")
    for value, field in zip(fields, _FIELDS, strict=True):
        problem = _field_problem(value, *field[1:])
        if problem:
            raise invalid(f"{{0}} {_q(expr)}: the {field[0]} field {literal(problem)}", "cron")
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
