"""Input templates (issue 17): rendered from the scheduled time in the schedule's zone only."""

import re
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from zoneinfo import ZoneInfo

import pytest
from hypothesis import given
from hypothesis import strategies as st

from activities.schedules import input_templates as templates
from activities.schedules.input_templates import (
    ISO_FORMAT,
    check_template,
    has_placeholders,
    render,
)
from schemas.error_codes import ErrorCode
from tests.support.errors import raises_code

BERLIN = "Europe/Berlin"
S3 = "s3://bucket/timesheets/{scheduled:%Y-%m-%d}/time_entries.csv"


def _utc(text: str) -> datetime:
    return datetime.fromisoformat(text).replace(tzinfo=UTC)


# --- accepted forms -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "expected"),
    [
        (S3, "s3://bucket/timesheets/2026-06-01/time_entries.csv"),
        ("/data/in/{scheduled:%Y}/{scheduled:%m}/{scheduled:%d}.csv", "/data/in/2026/06/01.csv"),
        ("{scheduled}", "2026-06-01T08:15:30+0200"),
        ("week-{scheduled:%G-W%V}.csv", "week-2026-W23.csv"),
        ("{scheduled:%H%M%S}", "081530"),
        ("{scheduled:%j %u %w}", "152 1 1"),
        ("{scheduled:%a %A %b %B %h %p}", "Mon Monday Jun June Jun AM"),
        ("{scheduled:%I %y %Z %z}", "08 26 CEST +0200"),
        ("{scheduled:%U %W %f}", "22 22 000000"),
        ("{scheduled:100%% %Y}", "100% 2026"),
        ("{{literal}} {scheduled:%Y}", "{literal} 2026"),
        ("a}}b{{c", "a}b{c"),
        ("/data/fixed.csv", "/data/fixed.csv"),
        ("", ""),
    ],
)
def test_templates_render(template: str, expected: str) -> None:
    check_template("sheet", template)
    assert render("sheet", template, _utc("2026-06-01T06:15:30"), BERLIN) == expected


def test_has_placeholders() -> None:
    assert has_placeholders(S3)
    assert has_placeholders("{scheduled}")
    assert not has_placeholders("/data/fixed.csv")
    assert not has_placeholders("/data/{{scheduled}}.csv")
    with raises_code(ErrorCode.SCHEDULE_INVALID, match="^--input template"):
        has_placeholders("{when}")


# --- refused forms --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("template", "why"),
    [
        ("{when}", "unknown placeholder {when}"),
        ("{Scheduled}", "unknown placeholder {Scheduled}"),
        ("{ scheduled }", "unknown placeholder { scheduled }"),
        ("{}", "unknown placeholder {}"),
        ("{scheduled_at:%Y}", "unknown placeholder {scheduled_at:%Y}"),
        ("/data/{scheduled:%Y", "'{' at 6 that is never closed"),
        ("/data/{", "'{' at 6 that is never closed"),
        ("/data/}", "'}' at 6 that closes nothing"),
        ("{scheduled:%Y}}", "'}' at 14 that closes nothing"),
        ("{scheduled:{%Y}", "'{' inside the placeholder"),
        ("{scheduled:}", "empty format in {scheduled:}"),
        ("{scheduled:%}", "ends with a lone '%'"),
        ("{scheduled:%Y%}", "ends with a lone '%'"),
        ("{scheduled:%Q}", "%Q, which is not a supported strftime directive"),
        ("{scheduled:%s}", "%s, which is not a supported strftime directive"),
        ("{scheduled:%e}", "%e, which is not a supported strftime directive"),
        ("{scheduled:%c}", "%c, which follows the worker's locale"),
        ("{scheduled:%x}", "%x, which follows the worker's locale"),
        ("{scheduled:%X}", "%X, which follows the worker's locale"),
        ("{scheduled:daily}", "has no % directive"),
        ("{scheduled:%%}", "has no % directive"),
    ],
)
def test_templates_refused_naming_the_input(template: str, why: str) -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        check_template("sheet", template)
    message = str(raised.value)
    assert message.startswith(f"--input sheet template {template!r} ")
    assert why in message
    assert "{scheduled:FORMAT}" in message
    with raises_code(ErrorCode.SCHEDULE_INVALID):
        render("sheet", template, _utc("2026-06-01T06:15:30"), BERLIN)


def test_render_refuses_a_naive_time_and_an_unknown_zone() -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID, match="has no zone"):
        render("sheet", S3, datetime(2026, 6, 1), BERLIN)
    with raises_code(ErrorCode.SCHEDULE_INVALID, match="--tz 'Mars/Olympus'"):
        render("sheet", S3, _utc("2026-06-01T06:15:30"), "Mars/Olympus")


# --- the schedule's zone, across daylight-saving changes ------------------------------------

HOUR = "{scheduled:%Y-%m-%d %H:%M %Z}"


@pytest.mark.parametrize(
    ("scheduled", "expected"),
    [
        # 2026-03-29: clocks go from 02:00 CET to 03:00 CEST at 01:00Z.
        ("2026-03-28T23:30", "2026-03-29 00:30 CET"),
        ("2026-03-29T00:30", "2026-03-29 01:30 CET"),
        ("2026-03-29T00:59", "2026-03-29 01:59 CET"),
        ("2026-03-29T01:00", "2026-03-29 03:00 CEST"),
        ("2026-03-29T01:30", "2026-03-29 03:30 CEST"),
        # 2026-10-25: clocks go from 03:00 CEST back to 02:00 CET at 01:00Z; 02:30 happens twice.
        ("2026-10-24T22:30", "2026-10-25 00:30 CEST"),
        ("2026-10-25T00:30", "2026-10-25 02:30 CEST"),
        ("2026-10-25T01:30", "2026-10-25 02:30 CET"),
        ("2026-10-25T02:30", "2026-10-25 03:30 CET"),
        # The local date differs from the UTC date near midnight.
        ("2026-06-30T22:30", "2026-07-01 00:30 CEST"),
        ("2026-12-31T23:30", "2027-01-01 00:30 CET"),
    ],
)
def test_berlin_rendering_across_dst(scheduled: str, expected: str) -> None:
    assert render("sheet", HOUR, _utc(scheduled), BERLIN) == expected


def test_iso_placeholder_carries_the_offset_across_dst() -> None:
    assert (
        render("s", "{scheduled}", _utc("2026-03-29T00:30"), BERLIN) == "2026-03-29T01:30:00+0100"
    )
    assert (
        render("s", "{scheduled}", _utc("2026-03-29T01:30"), BERLIN) == "2026-03-29T03:30:00+0200"
    )
    assert (
        render("s", "{scheduled}", _utc("2026-10-25T00:30"), BERLIN) == "2026-10-25T02:30:00+0200"
    )
    assert (
        render("s", "{scheduled}", _utc("2026-10-25T01:30"), BERLIN) == "2026-10-25T02:30:00+0100"
    )
    assert render("s", "{scheduled}", _utc("2026-10-25T01:30"), "UTC") == "2026-10-25T01:30:00+0000"


def test_the_zone_of_the_scheduled_time_does_not_matter_only_the_instant() -> None:
    instant = _utc("2026-03-29T00:30")
    elsewhere = instant.astimezone(timezone(timedelta(hours=-7)))
    assert render("s", HOUR, elsewhere, BERLIN) == render("s", HOUR, instant, BERLIN)


# --- properties -----------------------------------------------------------------------------

ZONES = ["UTC", BERLIN, "America/New_York", "Asia/Kolkata", "Australia/Lord_Howe"]
instants = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2099, 12, 31), timezones=st.just(UTC)
)
ROUND_TRIP = {
    "%Y": "year",
    "%m": "month",
    "%d": "day",
    "%H": "hour",
    "%M": "minute",
    "%S": "second",
}
DIRECTIVES = ["%Y", "%m", "%d", "%H", "%M", "%S", "%j", "%G", "%V", "%u", "%z", "%Z", "%y"]


@given(
    scheduled=instants,
    tz=st.sampled_from(ZONES),
    offset=st.integers(min_value=-14 * 60, max_value=14 * 60),
)
def test_render_is_a_function_of_its_arguments(scheduled: datetime, tz: str, offset: int) -> None:
    template = "s3://b/{scheduled:%G-W%V/%Y-%m-%dT%H%M%S%z}/{scheduled}/x.csv"
    first = render("sheet", template, scheduled, tz)
    assert render("sheet", template, scheduled, tz) == first
    # The same instant given in another offset renders the same: only the instant counts.
    shifted = scheduled.astimezone(timezone(timedelta(minutes=offset)))
    assert render("sheet", template, shifted, tz) == first


def test_the_template_module_never_reads_the_clock() -> None:
    source = Path(templates.__file__).read_text(encoding="utf-8")
    assert not re.search(r"\.(now|utcnow|today|fromtimestamp)\(|\btime\(\)", source)
    assert "import time" not in source and "random" not in source


@given(scheduled=instants, tz=st.sampled_from(ZONES))
def test_render_round_trips_to_the_scheduled_instant(scheduled: datetime, tz: str) -> None:
    rendered = render("sheet", "{scheduled:%Y-%m-%dT%H:%M:%S.%f%z}", scheduled, tz)
    assert datetime.strptime(rendered, "%Y-%m-%dT%H:%M:%S.%f%z") == scheduled
    iso = render("sheet", "{scheduled}", scheduled, tz)
    assert datetime.strptime(iso, ISO_FORMAT) == scheduled.replace(microsecond=0)


@given(
    scheduled=instants,
    tz=st.sampled_from(ZONES),
    directive=st.sampled_from(DIRECTIVES),
)
def test_each_directive_renders_as_strftime_in_the_zone(
    scheduled: datetime, tz: str, directive: str
) -> None:
    local = scheduled.astimezone(ZoneInfo(tz))
    rendered = render("sheet", f"x-{{scheduled:{directive}}}-y", scheduled, tz)
    assert rendered == f"x-{local.strftime(directive)}-y"
    # The numeric fields read back to the local time's own values.
    if directive in ROUND_TRIP:
        parsed = datetime.strptime(rendered, f"x-{directive}-y")
        assert getattr(parsed, ROUND_TRIP[directive]) == getattr(local, ROUND_TRIP[directive])
    elif directive == "%j":
        assert int(rendered[2:-2]) == local.timetuple().tm_yday
    elif directive == "%V":
        assert int(rendered[2:-2]) == local.isocalendar().week


@given(
    scheduled=instants,
    tz=st.sampled_from(ZONES),
    names=st.lists(st.sampled_from(["%a", "%A", "%b", "%B", "%p"]), min_size=1, max_size=5),
)
def test_names_are_english_and_parse_back(scheduled: datetime, tz: str, names: list[str]) -> None:
    fmt = " ".join(names)
    rendered = render("sheet", f"{{scheduled:{fmt}}}", scheduled, tz)
    local = scheduled.astimezone(ZoneInfo(tz))
    # In the C locale strptime reads English names: the rendering is what strftime would give.
    assert rendered == local.strftime(fmt)
