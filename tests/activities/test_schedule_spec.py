"""Schedule options (issue 17): every accepted form, and one clear refusal for each bad one."""

from datetime import timedelta

import pytest
from temporalio.client import ScheduleOverlapPolicy

from activities.schedules.options import (
    OVERLAP,
    check_cron,
    check_zone,
    overlap_policy,
    parse_duration,
)
from schemas.errors import ErrorCode, ForgeError
from tests.support.errors import raises_code


def test_a_refused_option_is_a_forge_error_of_schedule_invalid() -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        check_zone("x")
    error = raised.value
    assert isinstance(error, ForgeError) and not error.retryable
    assert error.line().startswith("SCHEDULE_INVALID: --tz 'x' is not a known zone")


# --- durations ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("30s", timedelta(seconds=30)),
        ("90s", timedelta(seconds=90)),
        ("15m", timedelta(minutes=15)),
        ("1h", timedelta(hours=1)),
        ("2d", timedelta(days=2)),
        ("1w", timedelta(weeks=1)),
        ("1h30m", timedelta(hours=1, minutes=30)),
        ("1w2d3h4m5s", timedelta(weeks=1, days=2, hours=3, minutes=4, seconds=5)),
        (" 10m ", timedelta(minutes=10)),
        ("0h5m", timedelta(minutes=5)),
    ],
)
def test_durations_accepted(text: str, expected: timedelta) -> None:
    assert parse_duration("every", text) == expected


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("0s", "is zero"),
        ("0h0m", "is zero"),
        ("-5m", "is not a positive duration"),
        ("", "is not a positive duration"),
        ("   ", "is not a positive duration"),
        ("5", "is not a positive duration"),
        ("m", "is not a positive duration"),
        ("1.5h", "is not a positive duration"),
        ("30m1h", "is not a positive duration"),
        ("1h1h", "is not a positive duration"),
        ("5 m", "is not a positive duration"),
        ("5M", "is not a positive duration"),
        ("1y", "is not a positive duration"),
        ("PT5M", "is not a positive duration"),
        ("٣m", "is not a positive duration"),
        ("9999999999w", "is too long"),
    ],
)
def test_durations_refused(text: str, why: str) -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        parse_duration("catchup_window", text)
    message = str(raised.value)
    assert message.startswith(f"--catchup-window {text!r} ")
    assert why in message and "30s, 15m, 1h" in message


# --- zones ----------------------------------------------------------------------------------


@pytest.mark.parametrize("zone", ["UTC", "Europe/Berlin", "America/New_York", "Asia/Kolkata"])
def test_zones_accepted(zone: str) -> None:
    assert check_zone(zone) == zone
    assert check_zone(f" {zone} ") == zone


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "--tz is empty"),
        ("  ", "--tz is empty"),
        ("Mars/Olympus", "is not a known zone"),
        ("CEST+2", "is not a known zone"),
        ("/usr/share/zoneinfo/UTC", "is a path"),
        ("../zoneinfo/UTC", "is a path"),
        ("Europe/../UTC", "is a path"),
        ("./UTC", "is a path"),
        ("Europe\\Berlin", "is a path"),
    ],
)
def test_zones_refused(text: str, why: str) -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        check_zone(text)
    assert why in str(raised.value)
    assert "--tz" in str(raised.value)
    if "is empty" not in why:
        assert repr(text) in str(raised.value)
        assert "e.g. Europe/Berlin, UTC" in str(raised.value)


def test_zone_in_the_wrong_case_gets_a_suggestion() -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID, match="did you mean Europe/Berlin"):
        check_zone("europe/berlin")


# --- overlap --------------------------------------------------------------------------------


def test_overlap_names_map_to_every_policy() -> None:
    every_policy = {p for p in ScheduleOverlapPolicy if p.name != "UNSPECIFIED"}
    assert set(OVERLAP.values()) == every_policy
    assert list(OVERLAP) == [
        "skip",
        "buffer-one",
        "buffer-all",
        "cancel-other",
        "terminate-other",
        "allow-all",
    ]
    for name, policy in OVERLAP.items():
        assert overlap_policy(name) is policy
        assert overlap_policy(name.upper()) is policy
    assert overlap_policy("buffer-one") is ScheduleOverlapPolicy.BUFFER_ONE


@pytest.mark.parametrize("text", ["", "buffer", "buffer_one", "BUFFER ONE", "none", "cancel"])
def test_overlap_refused_lists_the_choices(text: str) -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        overlap_policy(text)
    message = str(raised.value)
    assert message.startswith(f"--overlap {text!r}")
    assert "skip, buffer-one, buffer-all, cancel-other, terminate-other, allow-all" in message


# --- cron -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "normalised"),
    [
        ("* * * * *", "* * * * *"),
        ("0 6 * * *", "0 6 * * *"),
        ("  30   6 * *  MON-FRI ", "30 6 * * MON-FRI"),
        ("*/15 * * * *", "*/15 * * * *"),
        ("0-30/10 9-17 * * 1-5", "0-30/10 9-17 * * 1-5"),
        ("0,15,30,45 * * * *", "0,15,30,45 * * * *"),
        ("0 0 1 JAN,JUL *", "0 0 1 JAN,JUL *"),
        ("0 0 1 jan-mar *", "0 0 1 jan-mar *"),
        ("0 0 * * sun", "0 0 * * sun"),
        ("0 0 * * 0,7", "0 0 * * 0,7"),
        ("59 23 31 12 6", "59 23 31 12 6"),
        ("0 0 1-31/2 */3 *", "0 0 1-31/2 */3 *"),
        ("0 0 * * MON-SAT", "0 0 * * MON-SAT"),
        ("@hourly", "@hourly"),
        ("@daily", "@daily"),
        ("@weekly", "@weekly"),
        ("@monthly", "@monthly"),
        ("@Yearly", "@yearly"),
    ],
)
def test_cron_accepted(expr: str, normalised: str) -> None:
    assert check_cron(expr) == normalised


@pytest.mark.parametrize(
    ("expr", "why"),
    [
        ("", "--cron is empty"),
        ("* * * *", "has 4 field(s)"),
        ("* * * * * *", "has 6 field(s)"),
        ("60 * * * *", "the minute field has '60'; allowed: numbers 0-59"),
        ("* 24 * * *", "the hour field has '24'; allowed: numbers 0-23"),
        ("* * 0 * *", "the day-of-month field has '0'; allowed: numbers 1-31"),
        ("* * 32 * *", "the day-of-month field has '32'"),
        ("* * * 13 *", "the month field has '13'; allowed: numbers 1-12 or JAN-DEC"),
        ("* * * 0 *", "the month field has '0'"),
        ("* * * * 8", "the day-of-week field has '8'; allowed: numbers 0-7 or SUN-SAT"),
        ("* * * * MON-FOO", "the day-of-week field has 'MON-FOO'"),
        ("* * * MON *", "the month field has 'MON'"),
        ("* * * * JAN", "the day-of-week field has 'JAN'"),
        ("5-1 * * * *", "range '5-1' whose start is after its end"),
        ("* * * * FRI-MON", "range 'FRI-MON' whose start is after its end"),
        ("*/0 * * * *", "has step '0'"),
        ("*/x * * * *", "has step 'x'"),
        ("*/ * * * *", "has step ''"),
        ("5/10 * * * *", "a step follows * or a range"),
        ("1,,2 * * * *", "the minute field has ''"),
        ("1, * * * *", "the minute field has ''"),
        ("-1 * * * *", "the minute field has '-1'"),
        ("1-2-3 * * * *", "the minute field has '1-2-3'"),
        ("? * * * *", "the minute field has '?'"),
        ("* * L * *", "the day-of-month field has 'L'"),
        ("* * * * 1#2", "the day-of-week field has '1#2'"),
        ("٣ * * * *", "the minute field has '٣'"),
        ("@reboot", "is not a known shortcut"),
        ("@every 5m", "give it with --every instead"),
        ("TZ=Europe/Berlin 0 6 * * *", "give it with --tz instead"),
        ("CRON_TZ=UTC 0 6 * * *", "give it with --tz instead"),
    ],
)
def test_cron_refused_naming_the_field(expr: str, why: str) -> None:
    with raises_code(ErrorCode.SCHEDULE_INVALID) as raised:
        check_cron(expr)
    message = str(raised.value)
    assert message.startswith("--cron")
    assert why in message
    if expr:
        assert repr(expr) in message
