"""A process's MeterProvider: /metrics text, OTLP export, Temporal's runtime metrics bridged in.

One provider per process (worker or API), installed as OpenTelemetry's global one, so the
instruments of activities/telemetry_metrics.py record into it. Temporal's Core metrics reach it
through the SDK's MetricBuffer, drained by the contrib's MetricsExporter. With FORGE_TELEMETRY=otlp
a periodic reader also exports everything by OTLP (flushed when the provider shuts down). With
FORGE_METRICS_PORT unset and no OTLP nothing is installed: every instrument stays the API's no-op
(docs/observability.md, workers/telemetry/observe.py decides).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING
from wsgiref.simple_server import WSGIServer

from opentelemetry import metrics
from opentelemetry.exporter.prometheus import PrometheusMetricReader
from opentelemetry.sdk.metrics import AlwaysOffExemplarFilter, Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from prometheus_client import CollectorRegistry, generate_latest, start_http_server
from temporalio.contrib.opentelemetry import MetricsExporter, ReplaySafeMeterProvider
from temporalio.runtime import (
    MetricBuffer,
    MetricBufferDurationFormat,
    Runtime,
    TelemetryConfig,
)

from activities import telemetry_metrics
from workers.telemetry.ports import metrics_port_file

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricExporter

    from workers.settings import Settings

__all__ = [
    "ProcessMetrics",
    "build_metrics",
]

_log = logging.getLogger(__name__)

# Bucket bounds in seconds: a step or a sandbox start takes from milliseconds to an hour; a gate
# waits from seconds to days.
_SECONDS = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600)
_WAITS = (1, 10, 60, 300, 900, 3600, 4 * 3600, 12 * 3600, 86400, 3 * 86400, 7 * 86400)
_VIEWS = (
    View(
        instrument_type=Histogram,
        instrument_name="forge.gate.wait",
        aggregation=ExplicitBucketHistogramAggregation(_WAITS),
    ),
    View(
        instrument_type=Histogram,
        instrument_name="forge.*.duration",
        aggregation=ExplicitBucketHistogramAggregation(_SECONDS),
    ),
)

# Core drops updates past this many between drains (one a second): far above a busy worker's.
_BUFFER_SIZE = 100_000

# The OTLP/HTTP path of metrics under OTEL_EXPORTER_OTLP_ENDPOINT (the specification's rule).
_METRICS_PATH = "/v1/metrics"


@dataclass
class ProcessMetrics:
    """The installed provider, its readers and Prometheus registry, the endpoint serving it."""

    provider: MeterProvider
    registry: CollectorRegistry
    buffer: MetricBuffer
    readers: tuple[MetricReader, ...] = ()
    port: int | None = None
    _server: WSGIServer | None = None
    _thread: threading.Thread | None = None
    _record: Path | None = field(default=None)

    def scrape(self) -> bytes:
        """The Prometheus text exposition of everything recorded (what /metrics answers)."""
        return generate_latest(self.registry)

    @contextlib.asynccontextmanager
    async def temporal_bridge(self) -> AsyncIterator[None]:
        """Drain Temporal's runtime metrics into the provider while the block runs."""
        async with MetricsExporter(self.buffer, self.provider, meter_name="temporalio"):
            yield

    def install(self, *, temporal: bool = True) -> None:
        """Make this the global provider and, with `temporal`, feed it Temporal's metrics.

        Call before the process opens its first Temporal client: the runtime carrying the
        metric buffer becomes the default one. Without `temporal` the buffer stays unused and
        `temporal_bridge` must not be entered.
        """
        # Replay-safe: a workflow that records through the global provider records once, not
        # on every replay (Forge's own instruments record in activities).
        metrics.set_meter_provider(ReplaySafeMeterProvider(self.provider))
        telemetry_metrics.enable()
        if temporal:
            runtime = Runtime(telemetry=TelemetryConfig(metrics=self.buffer))
            Runtime.set_default(runtime, error_if_already_set=False)

    def serve(self, port: int, home: Path, kind: str, address: str = "0.0.0.0") -> int:
        """Serve /metrics on `address`:`port` (0: a port the system chooses); record the port.

        The port is written to FORGE_HOME/metrics/<pid>.json so `forge dev status` (and a
        scraper's discovery) find it; N workers on one host with port 0 never collide.
        """
        self._server, self._thread = start_http_server(port, addr=address, registry=self.registry)
        self.port = int(self._server.server_port)
        self._record = metrics_port_file(home, os.getpid())
        self._record.parent.mkdir(parents=True, exist_ok=True)
        tmp = self._record.with_suffix(".tmp")
        tmp.write_text(json.dumps({"pid": os.getpid(), "kind": kind, "port": self.port}))
        tmp.replace(self._record)
        host = f"[{address}]" if ":" in address else address
        _log.info("%s serving Prometheus metrics at http://%s:%d/metrics", kind, host, self.port)
        return self.port

    def close(self) -> None:
        """Stop the endpoint, forget its recorded port, and flush the provider."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._record is not None:
            self._record.unlink(missing_ok=True)
            self._record = None
        self.provider.shutdown()


def build_metrics(
    service: str,
    *,
    settings: Settings | None = None,
    prometheus: bool = True,
    extra_readers: Sequence[MetricReader] = (),
) -> ProcessMetrics:
    """This process's provider, not yet installed: Prometheus text, OTLP, and `extra_readers`.

    With `prometheus` (a /metrics endpoint will serve it), a reader keeps the Prometheus
    registry. With `settings` saying FORGE_TELEMETRY=otlp, a periodic reader exports by OTLP
    every OTEL_METRIC_EXPORT_INTERVAL ms, under the same service name and resource attributes
    as the process's spans. `extra_readers` adds readers (a test's InMemoryMetricReader).
    `ProcessMetrics.install` makes it the process's.
    """
    registry = CollectorRegistry(auto_describe=True)
    # Each reader aggregates every measurement on its own: one nobody reads is pure cost.
    readers: list[MetricReader] = [PrometheusMetricReader(registry=registry)] if prometheus else []
    attributes: dict[str, str] = {"service.name": service}
    if settings is not None and settings.telemetry == "otlp":
        readers.append(
            PeriodicExportingMetricReader(
                _otlp_exporter(settings),
                export_interval_millis=settings.otel_metric_export_interval,
            )
        )
        attributes = {
            **dict(settings.otel_resource_attributes),
            "service.name": settings.otel_service_name or service,
        }
    readers.extend(extra_readers)
    provider = MeterProvider(
        metric_readers=readers,
        resource=Resource.create(attributes),
        views=_VIEWS,
        # No exemplars: neither exposition uses them, and sampling one costs every measurement.
        exemplar_filter=AlwaysOffExemplarFilter(),
    )
    # Seconds, as Prometheus names durations (Core's default is milliseconds).
    buffer = MetricBuffer(_BUFFER_SIZE, MetricBufferDurationFormat.SECONDS)
    return ProcessMetrics(provider, registry, buffer, tuple(readers))


def _otlp_exporter(settings: Settings) -> MetricExporter:
    # The same endpoint and protocol as the process's spans (workers/telemetry/tracing.py).
    if settings.otel_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import (
            OTLPMetricExporter as GrpcExporter,
        )

        endpoint = settings.otel_endpoint or "http://localhost:4317"
        return GrpcExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"))
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

    base = settings.otel_endpoint or "http://localhost:4318"
    return OTLPMetricExporter(endpoint=base + _METRICS_PATH)
