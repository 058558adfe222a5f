"""Metrics fixtures: this test process's MeterProvider, read in memory and as /metrics text."""

from collections.abc import Iterator

import pytest
from opentelemetry.sdk.metrics.export import InMemoryMetricReader

from tests.telemetry.readings import Readings
from workers.telemetry.metrics import ProcessMetrics, build_metrics


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
