"""The process's TracerProvider, and the one trace every run has (docs/observability.md).

`install` builds a replay-safe TracerProvider (the Temporal SDK's, so a workflow replay records
nothing twice) from Settings: a Resource naming the process's role, the configured sampler, a
console or OTLP exporter behind a batch processor, flushed when the process exits. A run's
trace id is derived from its run id, so whichever process submits the run, and every worker that
ever touches it, records into the same trace.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING, Literal

from opentelemetry import context as otel_context
from opentelemetry import trace

from activities import telemetry as names

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import SpanProcessor
    from opentelemetry.sdk.trace.export import SpanExporter
    from opentelemetry.sdk.trace.sampling import Sampler
    from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider

    from workers.settings import Settings

__all__ = [
    "Role",
    "format_trace_id",
    "install",
    "installed",
    "run_root_span_id",
    "run_span",
    "run_trace_id",
]

Role = Literal["worker", "api", "cli"]

# The OTLP/HTTP path of traces under OTEL_EXPORTER_OTLP_ENDPOINT (the specification's rule).
_TRACES_PATH = "/v1/traces"

# What a span takes from its parent span (_Inherit).
_INHERITED = (names.RUN_ID, names.TENANT, names.STEP_ID)

_provider: ReplaySafeTracerProvider | None = None
# The trace id the next root span takes (run_span sets it around its span's start).
_next_trace_id: ContextVar[int | None] = ContextVar("forge_next_trace_id", default=None)


def run_trace_id(run_id: str) -> int:
    """The trace id of run `run_id`: the first 16 bytes of sha256("forge-run:" + run_id)."""
    digest = hashlib.sha256(f"forge-run:{run_id}".encode()).digest()
    return int.from_bytes(digest[:16], "big") or 1  # the all-zero id is invalid


def run_root_span_id(run_id: str) -> int:
    """The span id a run's trace is rooted at when a workflow starts it (a scheduled run)."""
    digest = hashlib.sha256(f"forge-run:{run_id}".encode()).digest()
    return int.from_bytes(digest[16:24], "big") or 1  # the all-zero id is invalid


def format_trace_id(trace_id: int) -> str:
    """A trace id as W3C and every tracing backend write it: 32 lowercase hex digits."""
    return trace.format_trace_id(trace_id)


def installed() -> bool:
    """Whether this process installed a tracer provider (FORGE_TELEMETRY other than off)."""
    return _provider is not None


def install(
    settings: Settings, role: Role, *, processors: Sequence[SpanProcessor] = ()
) -> ReplaySafeTracerProvider | None:
    """Install the process's tracer provider once; None (nothing installed) when telemetry is off.

    Args:
        settings: FORGE_TELEMETRY and the OTEL_* values (workers/settings_telemetry.py).
        role: The process's role, its service name unless OTEL_SERVICE_NAME is set.
        processors: Further span processors (tests read spans through an in-memory exporter).
    """
    global _provider
    if settings.telemetry == "off":
        return None
    if _provider is not None:
        return _provider
    # The SDK loads only in a process that records: off costs no import.
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import Span, SpanProcessor
    from opentelemetry.sdk.trace.export import BatchSpanProcessor
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
    from temporalio.contrib.opentelemetry import create_tracer_provider

    from workers.telemetry.masking import MaskingSpanProcessor

    class _Inherit(SpanProcessor):
        """A span started inside a run's span (in the same process) names the same run.

        The SDK's StartActivity spans, and the spans recorded inside an activity, are children
        of a span that carries forge.run_id, forge.tenant and forge.step_id: they take them.
        """

        def on_start(self, span: Span, parent_context: otel_context.Context | None = None) -> None:
            parent = trace.get_current_span(parent_context)
            given = getattr(parent, "attributes", None) or {}
            own = span.attributes or {}
            inherited = {k: given[k] for k in _INHERITED if k in given and k not in own}
            if inherited:
                span.set_attributes(inherited)

    class _RunIdGenerator(RandomIdGenerator):
        """Random ids, except a run's root span: run_span derived its trace id."""

        def generate_trace_id(self) -> int:
            derived = _next_trace_id.get()
            return derived if derived is not None else super().generate_trace_id()

    resource = Resource(
        {
            **dict(settings.otel_resource_attributes),
            "service.name": settings.otel_service_name or f"forge-{role}",
        }
    )
    provider = create_tracer_provider(
        sampler=_sampler(settings), resource=resource, id_generator=_RunIdGenerator()
    )
    provider.add_span_processor(_Inherit())
    # Every exporting processor sees each span masked (workers/telemetry/masking.py), a test's
    # too: what it reads is what would leave the process.
    exporting = (BatchSpanProcessor(_exporter(settings)), *processors)
    for processor in exporting:
        provider.add_span_processor(MaskingSpanProcessor(processor))
    trace.set_tracer_provider(provider)
    _provider = provider
    return provider


def _sampler(settings: Settings) -> Sampler:
    from opentelemetry.sdk.trace.sampling import (
        ALWAYS_OFF,
        ALWAYS_ON,
        ParentBased,
        TraceIdRatioBased,
    )

    name, ratio = settings.otel_traces_sampler, settings.otel_traces_sampler_arg
    root: Sampler = {"always_on": ALWAYS_ON, "always_off": ALWAYS_OFF}.get(
        name.removeprefix("parentbased_"), TraceIdRatioBased(ratio)
    )
    return ParentBased(root) if name.startswith("parentbased_") else root


def _exporter(settings: Settings) -> SpanExporter:
    if settings.telemetry == "console":
        from opentelemetry.sdk.trace.export import ConsoleSpanExporter

        return ConsoleSpanExporter()
    if settings.otel_protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import (
            OTLPSpanExporter as GrpcExporter,
        )

        endpoint = settings.otel_endpoint or "http://localhost:4317"
        return GrpcExporter(endpoint=endpoint, insecure=endpoint.startswith("http://"))
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

    base = settings.otel_endpoint or "http://localhost:4318"
    return OTLPSpanExporter(endpoint=base + _TRACES_PATH)


@contextmanager
def run_span(
    run_id: str, tenant: str, name: str, *, links: Sequence[trace.Link] = ()
) -> Iterator[int | None]:
    """The root span of run `run_id`'s trace, current while the run's workflow is started.

    Temporal carries the current span in the workflow's headers, so the workflow and every
    activity join this trace, on any worker, after any kill or continue-as-new. The span links
    to `links`, or else to the span current here (the API request that asked for the run).
    Yields the run's trace id, or None when no provider is installed (nothing is recorded).
    """
    if _provider is None:
        yield None
        return
    asked = trace.get_current_span().get_span_context()
    if not links and asked.is_valid:
        links = (trace.Link(asked),)
    trace_id = run_trace_id(run_id)
    token = _next_trace_id.set(trace_id)
    try:
        # An empty context: the run's trace is its own root, never a caller's child; a caller's
        # span (an API request's) is linked instead.
        span = names.tracer().start_span(
            name,
            context=otel_context.Context(),
            kind=trace.SpanKind.PRODUCER,
            attributes={names.RUN_ID: run_id, names.TENANT: tenant},
            links=links,
        )
    finally:
        _next_trace_id.reset(token)
    with trace.use_span(span, end_on_exit=True):
        yield trace_id
