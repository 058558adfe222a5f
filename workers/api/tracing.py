"""The run's trace id as the API returns it (the Forge-Trace-Id header, a run's `trace_id`).

A request's own span is FastAPI's (its built-in OpenTelemetry support: a SERVER span per
request, the caller's W3C traceparent its parent, recorded once a provider is installed). A run
started by the request has a trace of its own, derived from its run id, whose root links to that
request span (workers/telemetry/tracing.py, run_span).
"""

from __future__ import annotations

from workers.telemetry import tracing

__all__ = ["TRACE_ID_HEADER", "run_trace_id"]

TRACE_ID_HEADER = "Forge-Trace-Id"


def run_trace_id(run_id: str) -> str | None:
    """Run `run_id`'s trace id as 32 hex digits, or None when the API records nothing."""
    if not tracing.installed():
        return None
    return tracing.format_trace_id(tracing.run_trace_id(run_id))
