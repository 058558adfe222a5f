"""A real OTLP/HTTP receiver for tests: a loopback HTTP server decoding what arrives.

It answers POST /v1/traces and /v1/metrics as an OpenTelemetry Collector does, decoding each body
as an ExportTraceServiceRequest or ExportMetricsServiceRequest with opentelemetry-proto (not
Forge's code), and keeps every span and every metric data point with its resource's
service.name and its attributes as plain values, and every body as it arrived
(decompressed): the bytes that left the exporting process.
"""

from __future__ import annotations

import gzip
import json
import sys
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

__all__ = ["ReceivedPoint", "ReceivedSpan", "Receiver"]


@dataclass(frozen=True)
class ReceivedSpan:
    service: str
    name: str
    trace_id: str  # 32 hex digits
    span_id: str
    parent_span_id: str  # "" for a root
    attributes: dict[str, Any]
    links: tuple[str, ...]  # the linked spans' ids
    status_message: str = ""
    events: tuple[tuple[str, dict[str, Any]], ...] = ()  # (name, attributes) of each event


@dataclass(frozen=True)
class ReceivedPoint:
    """One data point of one metric: a sum's or gauge's value, a histogram's count."""

    service: str
    scope: str  # the instrumentation scope: forge, temporalio
    name: str  # the OpenTelemetry name, e.g. forge.steps
    attributes: dict[str, Any]
    value: float


def _value(value: AnyValue) -> Any:
    kind = value.WhichOneof("value")
    return None if kind is None else getattr(value, kind)


@dataclass
class Receiver:
    spans: list[ReceivedSpan] = field(default_factory=list)
    points: list[ReceivedPoint] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    bodies: list[bytes] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.headers.get("Content-Encoding") == "gzip":
                    body = gzip.decompress(body)
                receiver.paths.append(self.path)
                receiver.bodies.append(body)
                if self.path == "/v1/traces":
                    traces = ExportTraceServiceRequest()
                    traces.ParseFromString(body)
                    receiver._keep(traces)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    metrics = ExportMetricsServiceRequest()
                    metrics.ParseFromString(body)
                    receiver._keep_points(metrics)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *_args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def _keep(self, request: ExportTraceServiceRequest) -> None:
        found = []
        for resource_spans in request.resource_spans:
            resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
            for scope_spans in resource_spans.scope_spans:
                for span in scope_spans.spans:
                    found.append(
                        ReceivedSpan(
                            service=str(resource.get("service.name")),
                            name=span.name,
                            trace_id=span.trace_id.hex(),
                            span_id=span.span_id.hex(),
                            parent_span_id=span.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in span.attributes},
                            links=tuple(link.span_id.hex() for link in span.links),
                            status_message=span.status.message,
                            events=tuple(
                                (e.name, {a.key: _value(a.value) for a in e.attributes})
                                for e in span.events
                            ),
                        )
                    )
        with self._lock:
            self.spans.extend(found)

    def _keep_points(self, request: ExportMetricsServiceRequest) -> None:
        found = []
        for resource_metrics in request.resource_metrics:
            resource = {a.key: _value(a.value) for a in resource_metrics.resource.attributes}
            for scope_metrics in resource_metrics.scope_metrics:
                for metric in scope_metrics.metrics:
                    kind = metric.WhichOneof("data")
                    for point in getattr(metric, kind).data_points if kind else ():
                        if kind in ("histogram", "exponential_histogram"):
                            value = float(point.count)
                        else:
                            value = float(getattr(point, point.WhichOneof("value")))
                        found.append(
                            ReceivedPoint(
                                service=str(resource.get("service.name")),
                                scope=scope_metrics.scope.name,
                                name=metric.name,
                                attributes={a.key: _value(a.value) for a in point.attributes},
                                value=value,
                            )
                        )
        with self._lock:
            self.points.extend(found)

    def received_points(self) -> list[ReceivedPoint]:
        with self._lock:
            return list(self.points)

    def received(self) -> list[ReceivedSpan]:
        with self._lock:
            return list(self.spans)

    def __enter__(self) -> Receiver:
        self._thread.start()
        return self

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _exc: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()


def main() -> None:
    """`python -m tests.telemetry.otlp_receiver`: a receiver in a process of its own.

    Prints its URL, then answers each line read from stdin with the counts received so far as
    one JSON line; stops when stdin closes. The telemetry benchmark runs it so that decoding
    what arrives costs the measured process nothing, as a real Collector would.
    """
    with Receiver() as receiver:
        print(receiver.url, flush=True)
        for _ in sys.stdin:
            counts = {"spans": len(receiver.received()), "points": len(receiver.received_points())}
            print(json.dumps(counts), flush=True)


if __name__ == "__main__":
    main()
