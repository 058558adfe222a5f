"""Names every Forge span and metric shares, and the tracer and meter activities record with.

Only the OpenTelemetry API is used here: with no provider installed (FORGE_TELEMETRY=off, the
default) every span and instrument is the API's no-op, so recording costs nothing. The process
entry points (workers/telemetry/) install the SDK's providers when telemetry is on.
"""

from opentelemetry import metrics, trace

__all__ = [
    "ATTEMPT",
    "FAILURE_CLASS",
    "INSTRUMENTATION",
    "RUN_ID",
    "STEP_ID",
    "TENANT",
    "meter",
    "tracer",
]

# The instrumentation scope of everything Forge records itself (the Temporal SDK's spans carry
# its own scope).
INSTRUMENTATION = "forge"

# Span attributes and metric labels Forge adds where they apply (docs/observability.md).
TENANT = "forge.tenant"
RUN_ID = "forge.run_id"
STEP_ID = "forge.step_id"
ATTEMPT = "forge.attempt"
FAILURE_CLASS = "forge.failure_class"


def tracer() -> trace.Tracer:
    """Forge's tracer from the installed provider (the API's no-op one when none is)."""
    return trace.get_tracer(INSTRUMENTATION)


def meter() -> metrics.Meter:
    """Forge's meter from the installed provider (the API's no-op one when none is)."""
    return metrics.get_meter(INSTRUMENTATION)
