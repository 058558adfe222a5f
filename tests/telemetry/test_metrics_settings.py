"""FORGE_METRICS_ADDRESS and OTEL_METRIC_EXPORT_INTERVAL: read, validated, and what they drive."""

from __future__ import annotations

import logging
from pathlib import Path

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as Grpc
from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as Http
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader

from workers.settings import Settings, SettingsError
from workers.telemetry import metrics
from workers.telemetry.observe import MetricsPortError, _serve


def _env(tmp_path: Path, **variables: str) -> Settings:
    return Settings.from_env({"FORGE_HOME": str(tmp_path), **variables})


def test_defaults_and_each_variable_read(tmp_path: Path) -> None:
    default = _env(tmp_path)
    assert default.metrics_address == "0.0.0.0"
    assert default.otel_metric_export_interval == 60_000
    given = _env(tmp_path, FORGE_METRICS_ADDRESS=" [::1] ", OTEL_METRIC_EXPORT_INTERVAL="500")
    assert given.metrics_address == "::1" and given.otel_metric_export_interval == 500


@pytest.mark.parametrize(
    ("variable", "raw", "says"),
    [
        ("FORGE_METRICS_ADDRESS", "localhost", "the IP address /metrics listens on"),
        ("FORGE_METRICS_ADDRESS", "10.0.0.300", "e.g. 127.0.0.1"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "0", "milliseconds between OTLP metric exports"),
        ("OTEL_METRIC_EXPORT_INTERVAL", "5s", "a whole number from 1"),
    ],
)
def test_a_bad_value_names_its_variable(tmp_path: Path, variable: str, raw: str, says: str):
    with pytest.raises(SettingsError) as caught:
        _env(tmp_path, **{variable: raw})
    assert caught.value.variable == variable and says in str(caught.value)
    assert "\n" not in str(caught.value)


def _otlp_readers(built: metrics.ProcessMetrics) -> list[PeriodicExportingMetricReader]:
    return [r for r in built.readers if isinstance(r, PeriodicExportingMetricReader)]


def test_only_otlp_adds_a_periodic_otlp_reader_on_the_configured_protocol(tmp_path: Path):
    for mode in ("off", "console"):
        built = metrics.build_metrics("forge-worker", settings=_env(tmp_path, FORGE_TELEMETRY=mode))
        assert _otlp_readers(built) == []
        built.provider.shutdown()
    http = metrics.build_metrics(
        "forge-worker",
        settings=_env(
            tmp_path,
            FORGE_TELEMETRY="otlp",
            OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4318/",
            OTEL_METRIC_EXPORT_INTERVAL="1234",
            OTEL_SERVICE_NAME="billing-workers",
            OTEL_RESOURCE_ATTRIBUTES="deployment.environment=prod",
        ),
    )
    (reader,) = _otlp_readers(http)
    assert reader._export_interval_millis == 1234
    assert isinstance(reader._exporter, Http)
    assert reader._exporter._endpoint == "http://c:4318/v1/metrics"
    resource = http.provider._sdk_config.resource.attributes
    assert resource["service.name"] == "billing-workers"
    assert resource["deployment.environment"] == "prod"
    grpc = metrics.build_metrics(
        "forge-api",
        settings=_env(
            tmp_path,
            FORGE_TELEMETRY="otlp",
            OTEL_EXPORTER_OTLP_PROTOCOL="grpc",
            OTEL_EXPORTER_OTLP_ENDPOINT="http://c:4317",
        ),
    )
    (reader,) = _otlp_readers(grpc)
    assert isinstance(reader._exporter, Grpc)
    assert any(isinstance(r, PrometheusMetricReader) for r in grpc.readers)
    assert grpc.provider._sdk_config.resource.attributes["service.name"] == "forge-api"
    # OTLP only (no /metrics served): no Prometheus reader aggregating what nobody reads.
    pushed = metrics.build_metrics(
        "forge-worker", settings=_env(tmp_path, FORGE_TELEMETRY="otlp"), prometheus=False
    )
    assert [type(r) for r in pushed.readers] == [PeriodicExportingMetricReader]
    # Shut down without a receiver: the last export fails and is logged, nothing raises.
    for built in (http, grpc, pushed):
        built.provider.shutdown(timeout_millis=1000)


def test_metrics_bound_to_loopback_answer_there_and_the_log_names_the_address(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(home=tmp_path / "home", metrics_port=0, metrics_address="127.0.0.1")
    built = metrics.build_metrics("forge-worker")
    try:
        with caplog.at_level(logging.INFO, logger="workers.telemetry.metrics"):
            url = _serve(built, settings, "worker")
        port = built.port
        assert built._server is not None
        assert built._server.server_address[:2] == ("127.0.0.1", port)
        assert url == f"http://127.0.0.1:{port}/metrics"
        answer = httpx.get(url)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/plain")
        assert f"worker serving Prometheus metrics at http://127.0.0.1:{port}/metrics" in (
            caplog.text
        )
    finally:
        built.close()


def test_an_address_not_of_this_host_is_one_error_naming_both_variables(tmp_path: Path):
    # 192.0.2.0/24 is TEST-NET-1 (RFC 5737): never an address of this host.
    settings = Settings(home=tmp_path / "home", metrics_port=0, metrics_address="192.0.2.7")
    built = metrics.build_metrics("forge-worker")
    try:
        with pytest.raises(MetricsPortError) as caught:
            _serve(built, settings, "worker")
    finally:
        built.close()
    message = str(caught.value)
    assert "FORGE_METRICS_PORT=0, FORGE_METRICS_ADDRESS=192.0.2.7" in message
    assert "cannot serve /metrics there" in message and "\n" not in message
