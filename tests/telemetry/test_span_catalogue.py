"""docs/observability.md's span catalogue against what real runs record, both ways: a span or
attribute recorded but not listed fails, and so does one listed that no run records, unless the
page says it is recorded `only` sometimes."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from schemas.scope import Scope
from tests.support.sandbox import needs_bwrap
from tests.telemetry.span_catalogue import by_catalogued_name, read_catalogue, recorded_problems
from tests.telemetry.test_run_trace import _two_steps_and_a_failure
from tests.telemetry.trace_shape import run_trace
from tests.workflows.model_env import model_engine
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from tests.workflows.test_model_runs import OBJECTIVE, SALES, SCRIPT
from workflows.gate_spans import GATE_SPAN
from workflows.run import CompiledRunWorkflow


def test_the_catalogue_describes_every_span_it_names():
    catalogue = read_catalogue()
    assert not [name for name, doc in catalogue.spans.items() if not doc.described]
    assert {"gate.opened", "gate.decided"} == set(catalogue.events)


@needs_bwrap
async def test_the_docs_span_catalogue_lists_every_span_and_attribute_runs_record_and_no_other(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, SCRIPT) as (eng, _):
        # A Code-Act run over the local Messages server, its step code calling bridge tools.
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        code_act = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        # A gated run decided by an update; a frozen-code run with a failing step.
        gated = await eng.start(gated_plan())
        await gated.execute_update(
            CompiledRunWorkflow.decide_gate, decision(await pending_gate(gated))
        )
        failing = await eng.start(_two_steps_and_a_failure())
        results = [await h.result() for h in (code_act, gated, failing)]
    assert [r.status for r in results] == ["completed", "completed", "failed"]

    recorded = by_catalogued_name(
        span for handle in (code_act, gated, failing) for span in run_trace(spans, handle.id)[0]
    )
    catalogue = read_catalogue()
    # Recorded, not listed: a span name, a listed attribute missing, an attribute not listed.
    assert recorded_problems(recorded, catalogue) == []
    # Listed, never recorded: a span the page does not mark `only`.
    always = {name for name, doc in catalogue.spans.items() if not doc.conditional_span}
    assert sorted(always - set(recorded)) == [], "in the catalogue, never recorded"

    # The gate's events and their attributes.
    events = [e for s in recorded[GATE_SPAN] for e in s.events]
    assert sorted(e.name for e in events) == sorted(catalogue.events)
    for event in events:
        assert set(event.attributes or {}) == catalogue.events[event.name], event.name
