"""A Code-Act run over the local Messages server: its model calls, sandbox runs and tool calls
are spans of the run's one trace, and the model spans' tokens add up to what the budget ledger
charged the run.

The process's provider is installed as `forge run`'s is (tests/telemetry's `spans` fixture), so
the Temporal SDK's workflow and activity spans are recorded too and the trace is whole.
"""

from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from activities.telemetry import RUN_ID, STEP_ID, TENANT
from schemas.names import STEP_EXECUTE
from schemas.scope import Scope
from tests.spans.conftest import by_name
from tests.support.sandbox import needs_bwrap
from tests.telemetry.conftest import installed_exporter
from tests.telemetry.trace_shape import ancestors, run_trace
from tests.workflows.model_env import API_KEY, model_engine
from tests.workflows.test_model_runs import OBJECTIVE, SALES, SCRIPT

# The executors' answers report cached input, as real prompt-cached calls do.
CACHED = {
    "input_tokens": 40,
    "output_tokens": 90,
    "cache_read_input_tokens": 700,
    "cache_creation_input_tokens": 300,
}
CACHED_SCRIPT = [
    {**e, "response": {**e["response"], "usage": CACHED}}
    if e.get("when", {}).get("consumer") == "executor"
    else e
    for e in SCRIPT
]


@pytest.fixture
def traced(tmp_path: Path) -> Iterator[InMemorySpanExporter]:
    """The process's provider installed as a Forge process installs it, spans kept in memory."""
    with installed_exporter(tmp_path / "otel-home") as exporter:
        yield exporter


@needs_bwrap
async def test_a_code_act_run_records_its_model_sandbox_and_tool_spans(
    temporal_env, task_queue, tmp_path, traced
):
    spans = traced
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, CACHED_SCRIPT) as (eng, _):
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        log = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed"
    spent = result.budget.spent
    called = [e for e in log if e.type == "model.called.v1"]
    assert spent.cache_read_tokens == 1400 and spent.cache_creation_tokens == 600

    chats = by_name(spans, "chat ")
    attrs = [dict(s.attributes or {}) for s in chats]
    assert len(chats) == spent.model_calls == len(called) == 6
    # The GenAI conventions count cached input in input_tokens; the ledger keeps it apart.
    assert sum(a["gen_ai.usage.input_tokens"] for a in attrs) == (
        spent.input_tokens + spent.cache_read_tokens + spent.cache_creation_tokens
    )
    assert sum(a["gen_ai.usage.output_tokens"] for a in attrs) == spent.output_tokens
    assert sum(a["gen_ai.usage.cache_read.input_tokens"] for a in attrs) == (
        spent.cache_read_tokens
    )
    assert sum(a["gen_ai.usage.cache_creation.input_tokens"] for a in attrs) == (
        spent.cache_creation_tokens
    )
    # ... and to the ledger's own record of each call, the run's model.called.v1 events.
    for key, field in (
        ("gen_ai.usage.output_tokens", "output_tokens"),
        ("gen_ai.usage.cache_read.input_tokens", "cache_read_tokens"),
        ("gen_ai.usage.cache_creation.input_tokens", "cache_creation_tokens"),
    ):
        assert sum(a[key] for a in attrs) == sum(e.payload[field] for e in called), key
    for span, a, event in zip(chats, attrs, called, strict=True):
        model = event.payload["model"].split(":", 1)[1]
        assert span.name == f"chat {model}"
        assert a["gen_ai.operation.name"] == "chat"
        assert a["gen_ai.provider.name"] == "anthropic"
        assert a["gen_ai.request.model"] == model
        assert a["gen_ai.response.model"] == event.payload["provider_model"]
        assert list(a["gen_ai.response.finish_reasons"]) == [event.payload["stop_reason"]]
        assert a[RUN_ID] == handle.id and a[TENANT] == Scope.default().tenant
        assert a["forge.attempt"] == event.payload["attempt"]
    consumers = [a["forge.model.consumer"] for a in attrs]
    assert consumers == [e.payload["consumer"] for e in called]
    executors = [a for a in attrs if a["forge.model.consumer"] == "executor"]
    assert [a[STEP_ID] for a in executors] == ["totals", "summary"]

    # Each step's program ran in the sandbox: its span carries the step, exit code and CPU.
    sandboxes = {dict(s.attributes or {})[STEP_ID]: s for s in by_name(spans, "sandbox.run")}
    assert set(sandboxes) == {"totals", "summary"}
    totals = dict(sandboxes["totals"].attributes or {})
    assert totals["forge.sandbox.exit_code"] == 0 and totals["forge.sandbox.cpu_s"] > 0
    assert totals[RUN_ID] == handle.id and totals["forge.attempt"] == 1

    # The program's bridge calls, each an execute_tool span of the step.
    tools = by_name(spans, "execute_tool ")
    names = sorted(s.name for s in tools)
    assert names == ["execute_tool artifact.evaluate", "execute_tool log.note"]
    assert all(dict(s.attributes or {})["forge.tool.outcome"] == "ok" for s in tools)
    # One trace, derived from the run id: every span above sits under the run's workflow.
    in_trace, by_id = run_trace(spans, handle.id)
    assert {s.context.span_id for s in [*chats, *tools, *sandboxes.values()]} <= {
        s.context.span_id for s in in_trace
    }
    (root,) = [s for s in in_trace if s.parent is None]
    assert root.name == "forge.run.submit"
    workflow = ["RunWorkflow:CompiledRunWorkflow", "StartWorkflow:CompiledRunWorkflow", root.name]
    for span, a in zip(chats, attrs, strict=True):
        up = ancestors(span, by_id)
        assert up[-3:] == workflow, (span.name, up)
        # The evaluator is asked by step code, through the bridge: inside its tool call.
        if a["forge.model.consumer"] == "evaluator":
            assert up[:2] == ["execute_tool artifact.evaluate", f"RunActivity:{STEP_EXECUTE}"]
        else:
            assert up[0].startswith("RunActivity:"), (span.name, up)
    for span in [*tools, *sandboxes.values()]:
        up = ancestors(span, by_id)
        assert f"RunActivity:{STEP_EXECUTE}" in up and up[-3:] == workflow, (span.name, up)

    # No prompt or response text, and not the provider's key.
    exported = "".join(s.to_json() for s in spans.get_finished_spans())
    assert OBJECTIVE not in exported and "north" not in exported and API_KEY not in exported
