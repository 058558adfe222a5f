"""FORGE_TELEMETRY and the OTEL_* variables: read once in Settings, passed to the SDK explicitly."""

from __future__ import annotations

from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as Grpc
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as Http
from opentelemetry.sdk.trace.export import ConsoleSpanExporter, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from tests.telemetry.conftest import uninstall
from workers.settings import Settings, SettingsError
from workers.telemetry import tracing


def _env(tmp_path: Path, **variables: str) -> Settings:
    return Settings.from_env({"FORGE_HOME": str(tmp_path), **variables})


def test_off_by_default_and_each_variable_read(tmp_path: Path) -> None:
    off = _env(tmp_path)
    assert off.telemetry == "off" and off.otel_traces_sampler == "parentbased_always_on"
    on = _env(
        tmp_path,
        FORGE_TELEMETRY="OTLP",
        OTEL_EXPORTER_OTLP_ENDPOINT="http://collector:4318/",
        OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
        OTEL_SERVICE_NAME="billing-workers",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=prod, team=a%20b",
        OTEL_TRACES_SAMPLER="parentbased_traceidratio",
        OTEL_TRACES_SAMPLER_ARG="0.25",
    )
    assert on.telemetry == "otlp" and off.telemetry_content == "off"
    assert _env(tmp_path, FORGE_TELEMETRY_CONTENT=" Masked ").telemetry_content == "masked"
    assert on.otel_endpoint == "http://collector:4318"
    assert on.otel_protocol == "grpc"
    assert on.otel_service_name == "billing-workers"
    assert on.otel_resource_attributes == (("deployment.environment", "prod"), ("team", "a b"))
    assert (on.otel_traces_sampler, on.otel_traces_sampler_arg) == (
        "parentbased_traceidratio",
        0.25,
    )


@pytest.mark.parametrize(
    ("variable", "value", "expected"),
    [
        ("FORGE_TELEMETRY", "yes", "off (the default"),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318", "the OTLP receiver's base URL"),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json", "http/protobuf (the default) or grpc"),
        ("OTEL_RESOURCE_ATTRIBUTES", "team", "comma-separated key=value pairs"),
        ("OTEL_TRACES_SAMPLER", "sometimes", "one of always_on, always_off"),
        ("OTEL_TRACES_SAMPLER_ARG", "1.5", "0 to 1"),
        ("FORGE_TELEMETRY_CONTENT", "on", "off (the default: no prompt or response"),
    ],
)
def test_a_bad_value_is_one_line_naming_the_variable(
    tmp_path: Path, variable: str, value: str, expected: str
) -> None:
    with pytest.raises(SettingsError) as caught:
        _env(tmp_path, **{variable: value})
    message = str(caught.value)
    assert message.startswith(f"{variable}={value!r} is invalid: expected ")
    assert expected in message and "\n" not in message


def test_the_provider_carries_the_resource_and_sampler(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    settings = _env(
        tmp_path,
        FORGE_TELEMETRY="console",
        OTEL_RESOURCE_ATTRIBUTES="deployment.environment=test",
        OTEL_TRACES_SAMPLER="traceidratio",
        OTEL_TRACES_SAMPLER_ARG="0",
    )
    try:
        tracing.install(settings, "api", processors=[SimpleSpanProcessor(exporter)])
        assert tracing.installed()
        # A ratio of 0 keeps no trace; the run's root is sampled by its derived id like any other.
        with tracing.run_span("run-x", "acme", "root") as trace_id:
            assert trace_id == tracing.run_trace_id("run-x")
        assert exporter.get_finished_spans() == ()
    finally:
        uninstall()
    settings = _env(tmp_path, FORGE_TELEMETRY="console", OTEL_SERVICE_NAME="edge")
    exporter = InMemorySpanExporter()  # a provider's shutdown stops its exporter
    try:
        tracing.install(settings, "api", processors=[SimpleSpanProcessor(exporter)])
        with tracing.run_span("run-x", "acme", "root"):
            pass
        (span,) = exporter.get_finished_spans()
        assert span.resource.attributes["service.name"] == "edge"
        assert span.context.trace_id == tracing.run_trace_id("run-x")
        assert span.attributes[names.TENANT] == "acme"
    finally:
        uninstall()


def test_each_role_names_its_service(tmp_path: Path) -> None:
    ended: list = []
    for role in ("worker", "api", "cli"):
        exporter = InMemorySpanExporter()
        try:
            tracing.install(
                _env(tmp_path, FORGE_TELEMETRY="console"),
                role,
                processors=[SimpleSpanProcessor(exporter)],
            )
            names.tracer().start_span(role).end()
            ended.extend(exporter.get_finished_spans())
        finally:
            uninstall()
    assert [(s.name, s.resource.attributes["service.name"]) for s in ended] == [
        ("worker", "forge-worker"),
        ("api", "forge-api"),
        ("cli", "forge-cli"),
    ]


def test_the_exporter_follows_mode_and_protocol(tmp_path: Path) -> None:
    assert isinstance(
        tracing._exporter(_env(tmp_path, FORGE_TELEMETRY="console")), ConsoleSpanExporter
    )
    http = tracing._exporter(
        _env(tmp_path, FORGE_TELEMETRY="otlp", OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318")
    )
    assert isinstance(http, Http) and http._endpoint == "http://c:4318/v1/traces"
    grpc = tracing._exporter(
        _env(
            tmp_path,
            FORGE_TELEMETRY="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
            OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4317",
        )
    )
    assert isinstance(grpc, Grpc)
    grpc.shutdown()
    http.shutdown()
