"""Telemetry fixtures: a tracer provider installed for one test and read through the SDK's
in-memory exporter; this test process's MeterProvider, read in memory and as /metrics text."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from tests.otel_globals import reset_tracer_provider
from tests.telemetry.readings import Readings
from workers.settings import Settings
from workers.telemetry import tracing
from workers.telemetry.metrics import ProcessMetrics, build_metrics


def uninstall() -> None:
    """Put the process back as FORGE_TELEMETRY=off left it: no provider, the API's no-op."""
    reset_tracer_provider()


@contextmanager
def installed_exporter(home: Path) -> Iterator[InMemorySpanExporter]:
    """Telemetry on as a Forge process installs it (the console exporter, captured), and every
    ended span kept in memory; uninstalled after."""
    exporter = InMemorySpanExporter()
    settings = Settings(home=home, telemetry="console")
    tracing.install(settings, "worker", processors=[SimpleSpanProcessor(exporter)])
    try:
        yield exporter
    finally:
        uninstall()


@pytest.fixture
def spans(tmp_path: Path) -> Iterator[InMemorySpanExporter]:
    """Telemetry on (the console exporter, captured) and every ended span kept in memory."""
    with installed_exporter(tmp_path / "otel-home") as exporter:
        yield exporter


@pytest.fixture(scope="session")
def process_metrics() -> Iterator[tuple[ProcessMetrics, InMemoryMetricReader]]:
    # OpenTelemetry takes one global provider per process: installed once, read by every test
    # of the session as differences (Readings), never as absolute totals.
    reader = InMemoryMetricReader()
    installed = build_metrics("forge-test", extra_readers=[reader])
    installed.install(temporal=False)  # the test's clients keep the SDK's default runtime
    yield installed, reader


@pytest.fixture
def readings(process_metrics: tuple[ProcessMetrics, InMemoryMetricReader]) -> Readings:
    installed, reader = process_metrics
    return Readings(installed, reader)
