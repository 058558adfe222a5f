"""The API over real HTTP: a caller's traceparent parents the request span, and the run's own
trace (derived from its run id) links to that request and comes back in header and body."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from activities import telemetry as names
from tests.api.server import running_api
from tests.api.test_runs import counting_plan, finished
from workers.services.runs import SUBMIT_SPAN
from workers.telemetry import tracing

CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"


async def test_a_callers_traceparent_round_trips_to_the_runs_trace(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    url = f"sqlite:///{tmp_path / 'forge.db'}"
    async with running_api(temporal_env, task_queue, tmp_path / "home", url) as api:
        async with api.client(role="operator") as http:
            up = await http.post("/v1/uploads", files={"file": ("data.csv", b"a\n1\n")})
            assert up.status_code == 201, up.text
            started = await http.post(
                "/v1/runs",
                json={"plan": counting_plan(), "inputs": {"data": up.json()["sha256"]}},
                headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
            )
            assert started.status_code == 201, started.text
            run_id = started.json()["run_id"]
            derived = tracing.format_trace_id(tracing.run_trace_id(run_id))
            assert started.headers["Forge-Trace-Id"] == derived
            assert started.json()["trace_id"] == derived
            detail = await finished(http, run_id)
            assert detail["status"] == "completed", detail
            assert detail["trace_id"] == derived
    tracing._provider.force_flush()  # type: ignore[union-attr]
    done = spans.get_finished_spans()

    by_id = {s.context.span_id: s for s in done}
    # The request's span (FastAPI's own) is the caller's child, in the caller's trace.
    (request,) = [s for s in done if s.name == "POST /v1/runs" and s.kind == SpanKind.SERVER]
    assert tracing.format_trace_id(request.context.trace_id) == CALLER_TRACE
    assert request.parent is not None and request.parent.is_remote
    assert f"{request.parent.span_id:016x}" == CALLER_SPAN
    # The run's trace is its own (the derived id) and links to the request that asked for it.
    (submit,) = [s for s in done if s.name == SUBMIT_SPAN and s.attributes[names.RUN_ID] == run_id]
    assert tracing.format_trace_id(submit.context.trace_id) == derived
    assert submit.parent is None
    (link,) = submit.links
    linked = by_id[link.context.span_id]
    while linked is not request and linked.parent is not None:
        linked = by_id[linked.parent.span_id]  # the request span or a span inside it
    assert linked is request
    # ... which the worker's spans joined.
    workers = [s for s in done if s.name.startswith("RunActivity:")]
    assert workers and {tracing.format_trace_id(s.context.trace_id) for s in workers} == {derived}
