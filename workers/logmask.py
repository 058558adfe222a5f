"""Credentials masked in every log record a Forge process writes (worker, CLI, API).

Installed once per process as the logging record factory, so it covers every logger,
including the SDK's and third parties', whatever handler later writes the record: the
message is rendered and masked when the record is made, and a traceback's text is rendered
and masked up front (a handler then prints that text instead of formatting the exception).
"""

import logging
import traceback
from typing import Any

from compiler.ladder.secrets.mask import mask_text

__all__ = ["install"]

_installed = False


def install() -> None:
    """Make every LogRecord of this process carry its message with credentials masked."""
    global _installed
    if _installed:
        return
    original = logging.getLogRecordFactory()

    def masking(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = original(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a bad format string: logging reports it itself
            return record
        masked = mask_text(message)[0]
        if masked != message or record.args:
            record.msg, record.args = masked, None
        if record.exc_info and record.exc_info[1] is not None and not record.exc_text:
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = mask_text(text)[0]
        return record

    logging.setLogRecordFactory(masking)
    _installed = True
