"""Every log line a Forge process writes is masked, text or JSON, whatever made its record."""

import io
import json
import logging
import random
import sys

import pytest

from tests.guard.corpus import CREDENTIALS, generator, secret
from workers.telemetry.logs import JsonLineFormatter, TextLineFormatter, configure_logging

SAMPLES = {name: generator(name)(random.Random(name)) for name in CREDENTIALS}
MASK = "[REDACTED:"


def _unfactoried(sample: str) -> logging.LogRecord:
    # Made from a dict, as a queue or socket listener rebuilds a record: no record factory, so
    # nothing was masked when it was made.
    try:
        raise RuntimeError(f"lost {sample}")
    except RuntimeError:
        exc_info = sys.exc_info()
    return logging.makeLogRecord(
        {
            "name": "forge.test",
            "levelno": logging.ERROR,
            "levelname": "ERROR",
            "msg": "planted %s",
            "args": (sample,),
            "exc_info": exc_info,
            "stack_info": f"Stack (most recent call last):\n  secret = {sample!r}",
            "forge_tenant": sample,
            "detail": sample,  # an extra no line writes
        }
    )


@pytest.mark.parametrize("name", CREDENTIALS)
def test_a_text_line_is_masked_whole(name: str) -> None:
    sample = SAMPLES[name]
    line = TextLineFormatter().format(_unfactoried(sample))
    assert secret(name, sample) not in line
    assert "ERROR forge.test: planted " in line and "Traceback" in line and MASK in line


@pytest.mark.parametrize("name", CREDENTIALS)
def test_a_json_line_masks_what_it_writes_and_keeps_the_traceback_masked(name: str) -> None:
    sample = SAMPLES[name]
    record = _unfactoried(sample)
    line = json.loads(JsonLineFormatter().format(record))
    hidden = secret(name, sample)
    assert hidden not in json.dumps(line)
    assert MASK in line["message"] and MASK in line["exception"] and MASK in line["tenant"]
    assert "detail" not in line
    # The traceback text the formatter kept on the record, for the next handler: masked too.
    assert record.exc_text and hidden not in record.exc_text and MASK in record.exc_text


def test_configure_logging_text_uses_the_masking_formatter() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    try:
        handler = configure_logging("text", stream=stream)
        assert isinstance(handler.formatter, TextLineFormatter)
        root.handle(_unfactoried(SAMPLES["stripe-secret"]))
    finally:
        for h in list(root.handlers):
            root.removeHandler(h)
        for h in before:
            root.addHandler(h)
        root.setLevel(level)
    written = stream.getvalue()
    assert secret("stripe-secret", SAMPLES["stripe-secret"]) not in written
    assert "[REDACTED:stripe-access-token]" in written
