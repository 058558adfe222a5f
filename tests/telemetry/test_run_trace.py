"""One trace per run: submission -> workflow -> each activity, every span named by forge.*."""

from __future__ import annotations

from collections import Counter

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities import telemetry as names
from schemas import names as activity_names
from schemas.error_codes import ErrorCode
from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan, write_json
from workers.plugin import ForgePlugin
from workers.services.runs import SUBMIT_SPAN
from workers.telemetry import tracing

RAISES = "raise SystemExit('planted failure')\n"


def _two_steps_and_a_failure() -> dict:
    return plan(
        code_step("first", write_json("output/first.json"), ["output/first.json"]),
        code_step(
            "second",
            write_json("output/second.json"),
            ["output/second.json"],
            depends_on=["first"],
            reads=["output/first.json"],
        ),
        code_step("broken", RAISES, ["output/broken.json"]),
    )


def _parent(span: ReadableSpan, by_id: dict[int, ReadableSpan]) -> ReadableSpan | None:
    return None if span.parent is None else by_id.get(span.parent.span_id)


async def test_a_frozen_code_run_is_one_trace_derived_from_its_run_id(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    scope = Scope.default()
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(_two_steps_and_a_failure())
        result = await handle.result()
    run_id = handle.id
    assert result.status == "failed"  # the broken step failed; the other two completed
    tracing._provider.force_flush()  # type: ignore[union-attr]
    finished = [s for s in spans.get_finished_spans() if s.attributes.get(names.RUN_ID) == run_id]
    by_id = {s.context.span_id: s for s in spans.get_finished_spans()}

    # Every span of the run is in the trace derived from its run id.
    derived = tracing.run_trace_id(run_id)
    assert {s.context.trace_id for s in finished} == {derived}
    in_trace = [s for s in spans.get_finished_spans() if s.context.trace_id == derived]
    # Every span of the trace names the run and its tenant.
    assert all(s.attributes.get(names.RUN_ID) == run_id for s in in_trace), [
        s.name for s in in_trace if s.attributes.get(names.RUN_ID) != run_id
    ]
    assert all(s.attributes.get(names.TENANT) == scope.tenant for s in in_trace)
    # The submission is the root; the workflow starts under it and runs under the start.
    (root,) = [s for s in in_trace if s.parent is None]
    assert root.name == SUBMIT_SPAN
    assert root.attributes[names.TENANT] == scope.tenant
    (start,) = [s for s in in_trace if s.name == "StartWorkflow:CompiledRunWorkflow"]
    assert _parent(start, by_id) is root
    (workflow,) = [s for s in in_trace if s.name == "RunWorkflow:CompiledRunWorkflow"]
    assert _parent(workflow, by_id) is start
    assert workflow.attributes[names.RUN_ID] == run_id
    assert workflow.attributes[names.TENANT] == scope.tenant

    # Each activity attempt is a span under its StartActivity, under the workflow.
    activities = [s for s in in_trace if s.name.startswith("RunActivity:")]
    assert activities
    for span in activities:
        scheduled = _parent(span, by_id)
        assert scheduled is not None and scheduled.name.startswith("StartActivity:")
        assert _parent(scheduled, by_id) is workflow
        assert span.attributes[names.RUN_ID] == run_id
        assert span.attributes[names.TENANT] == scope.tenant
        assert span.attributes[names.ATTEMPT] >= 1
    steps = [s for s in activities if s.name == f"RunActivity:{activity_names.STEP_EXECUTE}"]
    assert Counter(
        s.attributes[names.STEP_ID] for s in steps if s.attributes[names.ATTEMPT] == 1
    ) == {
        "first": 1,
        "second": 1,
        "broken": 1,
    }
    broken = [s for s in steps if s.attributes[names.STEP_ID] == "broken"]
    assert {s.attributes.get(names.FAILURE_CLASS) for s in broken} == {ErrorCode.CODE_ERROR.value}
    ok = [s for s in steps if s.attributes[names.STEP_ID] != "broken"]
    assert not any(names.FAILURE_CLASS in s.attributes for s in ok)


async def test_telemetry_off_installs_nothing(temporal_env, task_queue, tmp_path):
    from opentelemetry import trace

    from workers.settings import Settings

    assert tracing.install(Settings(home=tmp_path / "h"), "worker") is None
    assert not tracing.installed()
    # The API's proxy: every span Forge starts is a no-op one.
    assert isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)
    assert not names.tracer().start_span("x").is_recording()
    plugin = ForgePlugin()
    assert plugin.interceptors is None
    with tracing.run_span("r", "t", SUBMIT_SPAN) as trace_id:
        assert trace_id is None


def test_telemetry_off_loads_no_sdk() -> None:
    """Off, a process that builds a worker, submits runs and serves the API never imports the
    OpenTelemetry SDK or the Temporal SDK's OpenTelemetry support."""
    import subprocess
    import sys
    from pathlib import Path

    probe = (
        "import sys, workers.plugin, workers.services.runs, workers.cli.run, workers.api.app\n"
        "workers.plugin.ForgePlugin()\n"
        "print(sorted(m for m in sys.modules if m.startswith("
        "('opentelemetry.sdk', 'temporalio.contrib.opentelemetry'))))\n"
    )
    root = Path(__file__).resolve().parents[2]
    shown = subprocess.run(
        [sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, check=True
    )
    assert shown.stdout.strip() == "[]", shown.stdout
