"""Every exported span passes the guard's masking, whoever recorded it (telemetry/masking.py).

A library's span and the Temporal SDK's own RunActivity span (its status and `exception` event
carry a failed activity's message and stack trace) are exported through `tracing.install`'s
processors, as a test's in-memory exporter sees them: no credential of any format the guard
knows survives, and the mask shows where each was.
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

from opentelemetry import trace
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowFailureError
from temporalio.common import RetryPolicy
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from compiler.ladder.secrets.engine import ALL_RULES
from compiler.ladder.secrets.mask import BOUNDARY_DETECTORS, _detectors
from tests.guard.corpus import CREDENTIALS, generator, secret
from workers.telemetry import tracing
from workers.telemetry.masking import masked_span

MASK = "[REDACTED:"
# One sample of every credential format the guard's corpus holds, and what must never show.
SAMPLES = {name: generator(name)(random.Random(name)) for name in CREDENTIALS}
HIDDEN = {name: secret(name, sample) for name, sample in SAMPLES.items()}


def test_the_samples_cover_every_detector_the_masking_uses():
    # Planting these plants every kind of credential the boundary masking knows: each of its
    # detectors (the gitleaks and Forge rule set as "credential": its hits name their rule).
    kinds = {kind for sample in SAMPLES.values() for _s, _e, kind in _detectors().text(sample)}
    rules = {rule.id for rule in ALL_RULES}
    named = {kind if kind in BOUNDARY_DETECTORS else "credential" for kind in kinds}
    assert kinds - set(BOUNDARY_DETECTORS) <= rules
    # secret_field: a value under a field named for a secret, planted as such (password=...).
    assert named | {"secret_field"} == set(BOUNDARY_DETECTORS), named
    assert len(kinds & rules) > 20


def _leaks(exporter: InMemorySpanExporter) -> dict[str, str]:
    exported = "".join(s.to_json() for s in exporter.get_finished_spans())
    return {name: hidden[:12] for name, hidden in HIDDEN.items() if hidden in exported}


def test_a_librarys_span_is_masked_in_every_text_it_carries(spans: InMemorySpanExporter):
    tracer = trace.get_tracer("some.library")
    linked = trace.SpanContext(0x1F, 0x2F, is_remote=True)
    for sample in SAMPLES.values():
        with tracer.start_as_current_span(
            f"call {sample}",
            attributes={"db.statement": sample, "tags": ["ok", sample], "n": 3},
            links=[trace.Link(linked, {"why": sample})],
        ) as span:
            span.add_event(f"retry {sample}", {"detail": sample})
            span.record_exception(RuntimeError(f"could not connect with {sample}"))
            span.set_status(trace.Status(trace.StatusCode.ERROR, f"failed: {sample}"))
    assert _leaks(spans) == {}
    finished = spans.get_finished_spans()
    assert len(finished) == len(SAMPLES)
    for span in finished:
        attrs = dict(span.attributes or {})
        assert MASK in span.name and MASK in attrs["db.statement"], span.name
        assert attrs["tags"][0] == "ok" and MASK in attrs["tags"][1] and attrs["n"] == 3
        assert MASK in (span.status.description or "")
        retry, exception = span.events
        assert MASK in retry.name and MASK in str(retry.attributes["detail"])
        assert exception.name == "exception"
        assert MASK in str(exception.attributes["exception.message"])
        assert MASK in str(exception.attributes["exception.stacktrace"])
        assert MASK in str(span.links[0].attributes["why"])


def test_a_span_with_nothing_to_mask_is_passed_on_as_it_is(spans: InMemorySpanExporter):
    with trace.get_tracer("t").start_as_current_span("plain", attributes={"k": "v"}) as span:
        span.add_event("e", {"a": "b"})
    (exported,) = spans.get_finished_spans()
    assert exported.name == "plain" and dict(exported.attributes or {}) == {"k": "v"}
    assert masked_span(exported) is exported  # no copy: the cost of a clean span is a scan


@activity.defn(name="telemetry_test__connect")
async def _connect(samples: list[str]) -> None:
    raise RuntimeError("could not connect with " + " ; ".join(samples))


@workflow.defn(name="TelemetryTestConnect")
class _Connect:
    @workflow.run
    async def run(self, samples: list[str]) -> None:
        await workflow.execute_activity(
            _connect,
            samples,
            start_to_close_timeout=timedelta(seconds=60),
            retry_policy=RetryPolicy(maximum_attempts=1),
        )


def _named(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    (span,) = [s for s in exporter.get_finished_spans() if s.name == name]
    return span


async def test_the_temporal_sdks_failed_activity_span_is_masked(
    spans: InMemorySpanExporter, temporal_env, task_queue
):
    # No Forge code between the activity's error and the SDK's span: only the exporter masks.
    client = await Client.connect(
        temporal_env.client.service_client.config.target_host,
        namespace=temporal_env.client.namespace,
        interceptors=[TracingInterceptor()],
    )
    async with Worker(
        client,
        task_queue=task_queue,
        workflows=[_Connect],
        activities=[_connect],
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        handle = await client.start_workflow(
            _Connect.run, list(SAMPLES.values()), id=f"wf-{uuid.uuid4()}", task_queue=task_queue
        )
        try:
            await handle.result()
        except WorkflowFailureError:
            pass
        else:
            raise AssertionError("the activity was meant to fail")
    tracing._provider.force_flush()  # type: ignore[union-attr]
    assert _leaks(spans) == {}
    failed = _named(spans, "RunActivity:telemetry_test__connect")
    assert (failed.status.description or "").startswith("RuntimeError: could not connect with")
    assert (failed.status.description or "").count(MASK) >= len(SAMPLES)
    (exception,) = [e for e in failed.events if e.name == "exception"]
    assert str(exception.attributes["exception.message"]).count(MASK) >= len(SAMPLES)
    assert "Traceback" in str(exception.attributes["exception.stacktrace"])
    assert MASK in str(exception.attributes["exception.stacktrace"])
