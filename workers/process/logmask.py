"""Credentials masked in every log record a Forge process writes (worker, CLI, API).

Installed once per process as the logging record factory, so it covers every logger,
including the SDK's and third parties', whatever handler later writes the record: the
message is rendered and masked when the record is made, and a traceback's text is rendered
and masked up front (a handler then prints that text instead of formatting the exception).
What was masked is noted for a guard.output_masked.v1 event (activities/masked_output.py).
"""

import logging
import traceback
from typing import Any

__all__ = ["install"]

_installed = False


def install() -> None:
    """Make every LogRecord of this process carry its message with credentials masked."""
    global _installed
    if _installed:
        return
    original = logging.getLogRecordFactory()

    def masking(*args: Any, **kwargs: Any) -> logging.LogRecord:
        # Imported by the first record, not by `install`: `forge --help` logs nothing and
        # should not load the credential rules.
        from activities import masked_output
        from compiler.ladder.secrets.mask import mask_text

        record = original(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: logging reports it itself
            return record
        masked, found = mask_text(message)
        if masked != message or record.args:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text, in_trace = mask_text(text)
            found += in_trace
        masked_output.note("log", record.name, found)
        return record

    logging.setLogRecordFactory(masking)
    _installed = True
