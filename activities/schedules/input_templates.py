"""Input templates: `{scheduled:FORMAT}` resolved from a run's scheduled start time.

`s3://bucket/timesheets/{scheduled:%Y-%m-%d}/time_entries.csv` names one file per scheduled
time. FORMAT is a strftime format, read in the schedule's zone; `{scheduled}` alone is ISO 8601
(`%Y-%m-%dT%H:%M:%S%z`); `{{` and `}}` are literal braces. Rendering is a function of the
template, the scheduled time and the zone only: never the wall clock, nor the worker's locale
(day and month names are English whatever the locale).
"""

from dataclasses import dataclass
from datetime import datetime
from zoneinfo import ZoneInfo

from activities.schedules.options import check_zone
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.spelling import Named, Spelled
from schemas.spelling import literal as escape_braces

__all__ = ["ISO_FORMAT", "check_template", "has_placeholders", "render"]

ISO_FORMAT = "%Y-%m-%dT%H:%M:%S%z"
_PLACEHOLDER = "scheduled"
_FORM = (
    "placeholders are {scheduled} (ISO 8601) and {scheduled:FORMAT} with FORMAT a strftime "
    "format such as %Y-%m-%d; write {{ and }} for literal braces"
)
# Directives strftime renders the same in every locale: numbers, the offset and the zone name.
_NUMERIC = frozenset("dmyYHIMSfjUWGuVwzZ")
_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
# Directives whose strftime output follows the locale, spelled out here in English instead.
_NAMED = frozenset("aAbBhp")
# The locale's whole date/time forms, which differ between workers: refused, with the way out.
_LOCALE_FORMS = frozenset("cxX")


@dataclass(frozen=True)
class _Placeholder:
    format: str


def check_template(name: str, template: str) -> None:
    """Refuse (SCHEDULE_INVALID, naming `--input NAME`) a template that would not render."""
    _parse(name, template)


def has_placeholders(template: str) -> bool:
    """Whether the template varies with the scheduled time (else each run reads the same file)."""
    return any(isinstance(piece, _Placeholder) for piece in _parse("", template))


def render(name: str, template: str, scheduled: datetime, tz: str) -> str:
    """The template for one scheduled start time (aware, as Temporal gives it) read in `tz`."""
    if scheduled.tzinfo is None or scheduled.utcoffset() is None:
        raise ForgeError(
            f"--input {name}: the scheduled time {scheduled.isoformat()} has no zone; "
            "render needs the aware time Temporal gives",
            code=ErrorCode.SCHEDULE_INVALID,
        )  # raised in the worker only: no request named it
    local = scheduled.astimezone(ZoneInfo(check_zone(tz)))
    return "".join(
        piece if isinstance(piece, str) else _format(local, piece.format)
        for piece in _parse(name, template)
    )


def _parse(name: str, template: str) -> list[str | _Placeholder]:
    """Literal text and placeholders, in order; refuse any brace that is not one of the forms."""
    pieces: list[str | _Placeholder] = []
    literal: list[str] = []
    i = 0
    while i < len(template):
        char = template[i]
        if char in "{}" and template[i : i + 2] == char * 2:
            literal.append(char)
            i += 2
            continue
        if char == "}":
            raise _refused(name, template, f"has a '}}' at {i} that closes nothing")
        if char != "{":
            literal.append(char)
            i += 1
            continue
        end = template.find("}", i + 1)
        if end < 0:
            raise _refused(name, template, f"has a '{{' at {i} that is never closed")
        body = template[i + 1 : end]
        if "{" in body:
            raise _refused(name, template, f"has a '{{' inside the placeholder {{{body}}}")
        pieces.extend(["".join(literal), _placeholder(name, template, body)])
        literal = []
        i = end + 1
    pieces.append("".join(literal))
    return [piece for piece in pieces if piece != ""]


def _placeholder(name: str, template: str, body: str) -> _Placeholder:
    key, colon, fmt = body.partition(":")
    if key != _PLACEHOLDER:
        raise _refused(name, template, f"has an unknown placeholder {{{body}}}")
    if not colon:
        return _Placeholder(ISO_FORMAT)
    if not fmt:
        raise _refused(name, template, f"has an empty format in {{{body}}}")
    problem = _format_problem(fmt)
    if problem:
        raise _refused(name, template, f"has {{{body}}}, whose format {problem}")
    return _Placeholder(fmt)


def _format_problem(fmt: str) -> str | None:
    directives = 0
    i = 0
    while i < len(fmt):
        if fmt[i] != "%":
            i += 1
            continue
        directive = fmt[i + 1 : i + 2]
        if not directive:
            return "ends with a lone '%' (write %% for a percent sign)"
        if directive in _LOCALE_FORMS:
            return (
                f"uses %{directive}, which follows the worker's locale; spell it out, e.g. %Y-%m-%d"
            )
        if directive != "%" and directive not in _NUMERIC | _NAMED:
            return f"uses %{directive}, which is not a supported strftime directive"
        directives += directive != "%"
        i += 2
    return None if directives else "has no % directive, so it would never change"


def _format(local: datetime, fmt: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(fmt):
        if fmt[i] != "%":
            out.append(fmt[i])
            i += 1
            continue
        directive = fmt[i + 1]
        if directive in _NAMED:
            out.append(_named(local, directive))
        elif directive == "%":
            out.append("%")
        else:
            out.append(local.strftime("%" + directive))
        i += 2
    return "".join(out)


def _named(local: datetime, directive: str) -> str:
    if directive == "p":
        return "AM" if local.hour < 12 else "PM"
    if directive in "aA":
        day = _WEEKDAYS[local.weekday()]
        return day if directive == "A" else day[:3]
    month = _MONTHS[local.month - 1]
    return month if directive == "B" else month[:3]


def _refused(name: str, template: str, problem: str) -> ForgeError:
    # The input is named as the surface spells it: `--input NAME` on the CLI, `inputs.NAME` in
    # the API (schemas/spelling.py); the rest is text, its braces included.
    text = escape_braces(f" template {template!r} {problem}; {_FORM}")
    return ForgeError("", code=ErrorCode.SCHEDULE_INVALID).spell(
        Spelled("{0}" + text, (Named("input", name, "") if name else Named("option", "input"),))
    )
