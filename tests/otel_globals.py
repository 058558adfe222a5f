"""Put OpenTelemetry's process globals back as a process with FORGE_TELEMETRY=off has them.

The OpenTelemetry API lets a process set its tracer provider once; its own test helpers reset
these same globals between tests. Shared by tests/telemetry and tests/spans.
"""

from opentelemetry import trace
from opentelemetry.util._once import Once

from workers.telemetry import tracing

__all__ = ["reset_tracer_provider"]


def reset_tracer_provider() -> None:
    """No tracer provider installed: Forge's (shut down, exporting what it holds) nor the API's.

    A later test that installs its own (workers/telemetry/tracing.py, as `forge run` does) then
    finds none set.
    """
    if tracing._provider is not None:
        tracing._provider.shutdown()
    tracing._provider = None
    trace._TRACER_PROVIDER = None
    trace._TRACER_PROVIDER_SET_ONCE = Once()
