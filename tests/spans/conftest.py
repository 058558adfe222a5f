"""An in-memory span exporter on the process's tracer provider, for the span tests."""

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.contrib.opentelemetry import ReplaySafeTracerProvider, create_tracer_provider

from tests.models.test_gateway import stores
from tests.otel_globals import reset_tracer_provider
from tests.sandbox.bridge.conftest import artifacts, store

_EXPORTER = InMemorySpanExporter()
_ATTACHED: list[ReplaySafeTracerProvider] = []


def _provider() -> ReplaySafeTracerProvider:
    # The global provider can be set once per process: the first test to need one installs the
    # replay-safe provider a worker uses; the exporter is attached to it once.
    provider = trace.get_tracer_provider()
    if not isinstance(provider, ReplaySafeTracerProvider):
        provider = create_tracer_provider()
        trace.set_tracer_provider(provider)
    if provider not in _ATTACHED:
        provider.add_span_processor(SimpleSpanProcessor(_EXPORTER))
        _ATTACHED.append(provider)
    return provider


def _enable(provider: ReplaySafeTracerProvider, on: bool) -> None:
    # A global provider cannot be uninstalled; the SDK's own switch (OTEL_SDK_DISABLED, read
    # into `_disabled`) makes every get_tracer a no-op again, so the tests that run after these
    # in the same process run with telemetry off, as they were written to.
    sdk = provider._tracer_provider  # noqa: SLF001 (the replay-safe wrapper's SDK provider)
    sdk._disabled = not on  # type: ignore[attr-defined]  # noqa: SLF001


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    """The exporter of every span finished in this process during the test."""
    provider = _provider()
    _EXPORTER.clear()
    _enable(provider, True)
    try:
        yield _EXPORTER
    finally:
        _enable(provider, False)
        _EXPORTER.clear()
        # Off and no longer the process's provider either (this provider is no Forge install).
        reset_tracer_provider()


def by_name(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    """The finished spans whose name starts with `prefix`, in the order they ended."""
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


# The bridge tests' stores (an event store with a started step, an artifact store) and
# The gateway tests' stores.
__all__ = ["artifacts", "by_name", "spans", "store", "stores"]
