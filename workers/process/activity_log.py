"""A failed activity that Forge expected logs one line with its code; a bug keeps its traceback.

The SDK logs every failed activity on `temporalio.activity` as "Completing activity as failed"
with the traceback. For a ForgeError (a missing input, a refused plan: the catalogue names it
and the run reports it) the traceback says nothing the code and message do not, so the record
becomes one line; the traceback stays when the logger is enabled for DEBUG. Any other exception
is a fault worth its traceback and is left as the SDK wrote it.

Most activities convert their ForgeError at their own boundary (activities/errors.py,
`to_application_error`), so what the SDK logs is then an ApplicationError whose type is the
code's value: that is a ForgeError too. Forge builds no ApplicationError of a catalogued type
any other way.
"""

import logging
from typing import Any

from temporalio.exceptions import ApplicationError

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = ["install"]

_LOGGER = "temporalio.activity"
_FAILURE = "ActivityFailure"  # the SDK's `__temporal_error_identifier` for this record
_CODES = {code.value: code for code in ErrorCode}


def _expected(exc: BaseException | None) -> tuple[ErrorCode, str, Any] | None:
    """The code, message and place of a failure Forge raised on purpose; None for anything else."""
    if isinstance(exc, ForgeError):
        return exc.code, exc.message, exc.where
    if isinstance(exc, ApplicationError) and exc.type in _CODES:
        # to_application_error's last detail is {"code", "hint", "where"?}.
        told = exc.details[-1] if exc.details and isinstance(exc.details[-1], dict) else {}
        return _CODES[exc.type], exc.message, told.get("where")
    return None


class _ExpectedFailures(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "__temporal_error_identifier", None) != _FAILURE:
            return True
        expected = _expected(record.exc_info[1] if record.exc_info else None)
        if expected is None:
            return True
        code, message, where = expected
        at = f" at {where}" if where else ""
        # The SDK's message carries the activity's details in parentheses after its text.
        context = record.getMessage().removeprefix("Completing activity as failed").strip()
        record.msg = f"activity failed: {code.name}: {message}{at} {context}".rstrip()
        record.args = None
        if not logging.getLogger(_LOGGER).isEnabledFor(logging.DEBUG):
            record.exc_info, record.exc_text = None, None
        return True


_filter = _ExpectedFailures()


def install() -> None:
    """Shorten expected activity failures on this process's `temporalio.activity` logger."""
    logger = logging.getLogger(_LOGGER)
    if _filter not in logger.filters:
        logger.addFilter(_filter)
