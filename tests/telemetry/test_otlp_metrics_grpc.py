"""OTEL_EXPORTER_OTLP_PROTOCOL=grpc: the metric reader exports to a real OTLP/gRPC receiver.

The receiver is grpcio's server with opentelemetry-proto's MetricsService (not Forge's code);
the provider is the one build_metrics makes from Settings, Forge's instrument records into it.
"""

from __future__ import annotations

import threading
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc
from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)

from workers.settings import Settings
from workers.telemetry.metrics import build_metrics


class _Metrics(metrics_service_pb2_grpc.MetricsServiceServicer):
    def __init__(self) -> None:
        self.requests: list[ExportMetricsServiceRequest] = []
        self.arrived = threading.Event()

    def Export(  # noqa: N802 - the service's name
        self, request: ExportMetricsServiceRequest, context: Any
    ) -> ExportMetricsServiceResponse:
        self.requests.append(request)
        self.arrived.set()
        return ExportMetricsServiceResponse()


def test_metrics_reach_an_otlp_grpc_receiver_with_the_process_resource(tmp_path: Path) -> None:
    servicer = _Metrics()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    metrics_service_pb2_grpc.add_MetricsServiceServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    settings = Settings(
        home=tmp_path,
        telemetry="otlp",
        otel_protocol="grpc",
        otel_endpoint=f"http://127.0.0.1:{port}",
        otel_service_name="billing-workers",
        otel_resource_attributes=(("deployment.environment", "test"),),
        otel_metric_export_interval=3_600_000,  # only the flush below exports
    )
    built = build_metrics("forge-worker", settings=settings, prometheus=False)
    try:
        # Not installed as the global provider: a meter of its own records the same way.
        counter = built.provider.get_meter("forge").create_counter("forge.steps")
        counter.add(2, {"forge.outcome": "completed"})
        assert built.provider.force_flush(timeout_millis=30_000)
        assert servicer.arrived.wait(30)
    finally:
        built.provider.shutdown(timeout_millis=5_000)
        server.stop(None)
    (resource_metrics,) = servicer.requests[0].resource_metrics
    resource = {a.key: a.value.string_value for a in resource_metrics.resource.attributes}
    assert resource["service.name"] == "billing-workers"
    assert resource["deployment.environment"] == "test"
    (scope,) = resource_metrics.scope_metrics
    (metric,) = scope.metrics
    assert (scope.scope.name, metric.name) == ("forge", "forge.steps")
    (point,) = metric.sum.data_points
    assert point.as_int == 2 and metric.sum.is_monotonic
    assert {a.key: a.value.string_value for a in point.attributes} == {"forge.outcome": "completed"}
