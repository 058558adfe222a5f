"""A process's log lines: text (the default) or JSON lines carrying the trace they belong to.

A JSON line holds time, level, logger and message, the current OpenTelemetry span's trace_id and
span_id when there is one, and the run, step and tenant where known: from the current span's
forge.run_id, forge.step_id and forge.tenant attributes, from the Temporal SDK's activity and
workflow loggers (the run's workflow id), and from Forge code's
`extra={"forge_run": ..., "forge_step": ..., "forge_tenant": ...}`. The message was masked when
the record was made (workers/process/logmask.py); the formatter masks once more what it adds.
A text line is masked whole once formatted (its message, traceback and stack), so a record
made without the masking factory (`logging.makeLogRecord`) is masked too. No other extra is
written: an `extra=` field outside the three named never reaches a line.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from opentelemetry import trace

from activities.telemetry import RUN_ID, STEP_ID, TENANT
from compiler.ladder.secrets.mask import mask_text
from workers.process import logmask
from workers.settings_metrics import LogFormat

__all__ = ["JsonLineFormatter", "TextLineFormatter", "configure_logging"]

_TEXT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
# Record attributes Forge code sets through `extra`, and the JSON key each becomes.
_FORGE_EXTRAS = (("forge_run", "run"), ("forge_step", "step"), ("forge_tenant", "tenant"))
# Span attributes (activities/telemetry.py) and the JSON key each becomes.
_SPAN_ATTRIBUTES = ((RUN_ID, "run"), (STEP_ID, "step"), (TENANT, "tenant"))
# The Temporal SDK's loggers put the activity's or workflow's details on the record.
_TEMPORAL_EXTRAS = ("temporal_activity", "temporal_workflow")


def _masked(value: object) -> str:
    return mask_text(str(value))[0]


class JsonLineFormatter(logging.Formatter):
    """One JSON object per record, with trace and span ids from the current span."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (a traceback, masked, under "exception")."""
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname,
            "logger": record.name,
            "message": _masked(record.getMessage()),
        }
        span = trace.get_current_span()
        context = span.get_span_context()
        if context.is_valid:
            line["trace_id"] = trace.format_trace_id(context.trace_id)
            line["span_id"] = trace.format_span_id(context.span_id)
        # A recording SDK span holds its attributes: Forge's spans name run, step and tenant.
        attributes = getattr(span, "attributes", None)
        if isinstance(attributes, Mapping):
            for attribute, key in _SPAN_ATTRIBUTES:
                if attributes.get(attribute) is not None:
                    line[key] = _masked(attributes[attribute])
        for extra in _TEMPORAL_EXTRAS:
            details = getattr(record, extra, None)
            if isinstance(details, dict) and details.get("workflow_id"):
                line["run"] = _masked(details["workflow_id"])
        for attribute, key in _FORGE_EXTRAS:
            value = getattr(record, attribute, None)
            if value is not None:
                line[key] = _masked(value)
        if record.exc_info and not record.exc_text:
            # Kept on the record for every other handler: masked before it is kept.
            record.exc_text = _masked(self.formatException(record.exc_info))
        if record.exc_text:
            line["exception"] = _masked(record.exc_text)
        return json.dumps(line, ensure_ascii=False)


class TextLineFormatter(logging.Formatter):
    """The text line (time, level, logger, message, traceback), masked whole."""

    def __init__(self) -> None:
        super().__init__(_TEXT)

    def format(self, record: logging.LogRecord) -> str:
        """The record as text, every credential in it masked."""
        return _masked(super().format(record))


def configure_logging(
    log_format: LogFormat, *, level: int = logging.INFO, stream: TextIO | None = None
) -> logging.Handler:
    """Send this process's log records to `stream` (stderr) in `log_format`, masked.

    Replaces the root logger's handlers; returns the one installed.
    """
    logmask.install()
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonLineFormatter() if log_format == "json" else TextLineFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)
    return handler
