"""FORGE_METRICS_PORT and FORGE_LOG_FORMAT, and the JSON log lines they switch on."""

import io
import json
import logging
import socket
from pathlib import Path

import pytest
from opentelemetry.sdk.trace import TracerProvider

from activities.telemetry import RUN_ID, STEP_ID, TENANT
from workers.settings import ENV_VARS, Settings, SettingsError
from workers.telemetry.logs import JsonLineFormatter, configure_logging
from workers.telemetry.observe import MetricsPortError, observed


def test_unset_means_no_endpoint_and_text_logs(tmp_path: Path) -> None:
    settings = Settings.from_env({"FORGE_HOME": str(tmp_path)})
    assert settings.metrics_port is None and settings.log_format == "text"
    assert ENV_VARS["metrics_port"] == "FORGE_METRICS_PORT"
    assert ENV_VARS["log_format"] == "FORGE_LOG_FORMAT"


def test_each_variable_is_read(tmp_path: Path) -> None:
    settings = Settings.from_env(
        {"FORGE_HOME": str(tmp_path), "FORGE_METRICS_PORT": " 0 ", "FORGE_LOG_FORMAT": "JSON"}
    )
    assert settings.metrics_port == 0 and settings.log_format == "json"


@pytest.mark.parametrize(
    ("variable", "raw", "says"),
    [
        ("FORGE_METRICS_PORT", "65536", "0 for one the system chooses"),
        ("FORGE_METRICS_PORT", "nine", "a TCP port"),
        ("FORGE_LOG_FORMAT", "xml", "text or json"),
    ],
)
def test_a_bad_value_names_its_variable(tmp_path: Path, variable: str, raw: str, says: str):
    with pytest.raises(SettingsError) as caught:
        Settings.from_env({"FORGE_HOME": str(tmp_path), variable: raw})
    assert caught.value.variable == variable and says in str(caught.value)


def _record(message: str, **extra: object) -> logging.LogRecord:
    record = logging.LogRecord("forge.test", logging.INFO, __file__, 1, message, None, None)
    record.__dict__.update(extra)
    return record


def test_a_json_line_inside_a_span_carries_its_trace_and_span_ids() -> None:
    tracer = TracerProvider().get_tracer("test")
    with tracer.start_as_current_span("step") as span:
        line = json.loads(JsonLineFormatter().format(_record("inside", forge_step="totals")))
        context = span.get_span_context()
    assert line["trace_id"] == f"{context.trace_id:032x}"
    assert line["span_id"] == f"{context.span_id:016x}"
    assert line["message"] == "inside" and line["step"] == "totals"
    outside = json.loads(JsonLineFormatter().format(_record("outside")))
    assert "trace_id" not in outside and "span_id" not in outside


def test_a_json_line_names_the_run_tenant_and_step_where_known() -> None:
    record = _record(
        "attempt failed",
        temporal_activity={"workflow_id": "run-1-abc", "activity_type": "step__execute"},
        forge_tenant="acme",
        forge_step="totals",
    )
    line = json.loads(JsonLineFormatter().format(record))
    assert (line["run"], line["tenant"], line["step"]) == ("run-1-abc", "acme", "totals")


def test_configure_logging_writes_json_lines_to_its_stream() -> None:
    stream = io.StringIO()
    root = logging.getLogger()
    before, level = list(root.handlers), root.level
    try:
        configure_logging("json", stream=stream)
        logging.getLogger("forge.test").warning("worker %s ready", "w-1")
    finally:
        for handler in list(root.handlers):
            root.removeHandler(handler)
        for handler in before:
            root.addHandler(handler)
        root.setLevel(level)
    [line] = [json.loads(text) for text in stream.getvalue().splitlines()]
    assert line["message"] == "worker w-1 ready" and line["level"] == "WARNING"


async def test_a_taken_port_is_one_error_naming_the_variable(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("0.0.0.0", 0))
        taken.listen()
        port = taken.getsockname()[1]
        settings = Settings(home=tmp_path / "home", metrics_port=port)
        with pytest.raises(MetricsPortError, match=f"FORGE_METRICS_PORT={port}"):
            async with observed(settings, "worker"):
                pass
    assert not (tmp_path / "home" / "metrics").exists() or not any(
        (tmp_path / "home" / "metrics").iterdir()
    )


def test_a_json_line_names_what_the_current_span_says() -> None:
    tracer = TracerProvider().get_tracer("test")
    attributes = {RUN_ID: "run-7-abc", STEP_ID: "totals", TENANT: "acme"}
    with tracer.start_as_current_span("step", attributes=attributes):
        line = json.loads(JsonLineFormatter().format(_record("inside")))
    assert (line["run"], line["step"], line["tenant"]) == ("run-7-abc", "totals", "acme")
