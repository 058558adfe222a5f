"""A failed activity that Forge expected logs one line with its code; a bug keeps its traceback.

The SDK logs every failed activity on `temporalio.activity` as "Completing activity as failed"
with the traceback. For a ForgeError (a missing input, a refused plan: the catalogue names it
and the run reports it) the traceback says nothing the code and message do not, so the record
becomes one line; the traceback stays when the logger is enabled for DEBUG. Any other exception
is a fault worth its traceback and is left as the SDK wrote it.
"""

import logging

from schemas.errors import ForgeError

__all__ = ["install"]

_LOGGER = "temporalio.activity"
_FAILURE = "ActivityFailure"  # the SDK's `__temporal_error_identifier` for this record


class _ExpectedFailures(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "__temporal_error_identifier", None) != _FAILURE:
            return True
        exc = record.exc_info[1] if record.exc_info else None
        if not isinstance(exc, ForgeError):
            return True
        where = f" at {exc.where}" if exc.where else ""
        # The SDK's message carries the activity's details in parentheses after its text.
        context = record.getMessage().removeprefix("Completing activity as failed").strip()
        record.msg = f"activity failed: {exc.code.value}: {exc.message}{where} {context}".rstrip()
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
