"""A worker logs an expected activity failure as one line with its code (issue 34 §7)."""

import logging

import pytest
import temporalio.activity

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from workers.process import activity_log

LOGGER = "temporalio.activity"


def _fail_as_the_sdk_logs(exc: Exception) -> None:
    try:
        raise exc
    except Exception:  # noqa: BLE001 - the SDK's own shape: it logs whatever the activity raised
        temporalio.activity.logger.warning(
            "Completing activity as failed",
            exc_info=True,
            extra={"__temporal_error_identifier": "ActivityFailure"},
        )


@pytest.fixture
def logged(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    activity_log.install()
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return caplog


def test_an_expected_failure_is_one_line_with_its_code(logged: pytest.LogCaptureFixture) -> None:
    _fail_as_the_sdk_logs(ForgeError("no input 'rates'", code=ErrorCode.MISSING_INPUT))
    [record] = logged.records
    assert record.getMessage() == "activity failed: MISSING_INPUT: no input 'rates'"
    assert "Traceback" not in logged.text and record.exc_info is None


def test_the_traceback_stays_at_debug_level(logged: pytest.LogCaptureFixture) -> None:
    logged.set_level(logging.DEBUG, logger=LOGGER)
    _fail_as_the_sdk_logs(ForgeError("no input 'rates'", code=ErrorCode.MISSING_INPUT))
    assert "MISSING_INPUT" in logged.text and "Traceback" in logged.text


def test_a_bug_keeps_its_traceback(logged: pytest.LogCaptureFixture) -> None:
    _fail_as_the_sdk_logs(KeyError("rates"))
    assert "Completing activity as failed" in logged.text and "Traceback" in logged.text
