"""Reading a run's trace out of an in-memory exporter: its spans, and each span's ancestry."""

from __future__ import annotations

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from workers.telemetry import tracing


def ancestors(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> list[str]:
    """The names of `span`'s parents, nearest first, as far as they were recorded."""
    found: list[str] = []
    while span.parent is not None and span.parent.span_id in by_id:
        span = by_id[span.parent.span_id]
        found.append(span.name)
    return found


def run_trace(
    exporter: InMemorySpanExporter, run_id: str
) -> tuple[list[ReadableSpan], dict[int, ReadableSpan]]:
    """(the spans in run `run_id`'s derived trace, every finished span by its span id).

    Flushes the process's provider first. Fails when a span naming the run is in another trace.
    """
    tracing._provider.force_flush()  # type: ignore[union-attr]
    done = exporter.get_finished_spans()
    derived = tracing.run_trace_id(run_id)
    strays = [
        s.name
        for s in done
        if s.attributes.get(names.RUN_ID) == run_id and s.context.trace_id != derived
    ]
    assert strays == [], f"spans of {run_id} outside its trace: {strays}"
    return [s for s in done if s.context.trace_id == derived], {s.context.span_id: s for s in done}
