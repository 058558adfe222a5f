"""A gated run decided over HTTP is one trace: the submission, the workflow, the steps before the
gate, the gate's opening and decision, and the steps after it, whichever request decided it."""

from __future__ import annotations

from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind

from activities import telemetry as names
from schemas import names as activity_names
from tests.api.server import running_api
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.telemetry.trace_shape import ancestors, run_trace
from tests.workflows.engine import engine
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from tests.workflows.test_gates_durability import idle, phase
from workers.services.runs import SUBMIT_SPAN
from workers.telemetry import tracing
from workers.telemetry.run_attributes import MESSAGE_NAME, SIGNAL_SPAN, UPDATE_SPAN
from workflows.gate_spans import GATE_DECIDED_EVENT, GATE_OPENED_EVENT, GATE_SPAN
from workflows.run import CompiledRunWorkflow

CALLER_TRACE = "0af7651916cd43dd8448eb211c80319c"
CALLER_SPAN = "b7ad6b7169203331"


async def test_a_gated_run_decided_over_http_is_one_trace(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    url = f"sqlite:///{tmp_path / 'forge.db'}"
    async with running_api(temporal_env, task_queue, tmp_path / "home", url) as api:
        async with api.client(role="operator") as ops, api.client(role="approver") as approver:
            started = await ops.post(
                "/v1/runs",
                json={"plan": gated_plan()},
                headers={"traceparent": f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"},
            )
            assert started.status_code == 201, started.text
            run_id = started.json()["run_id"]
            gate = await open_gate(approver, run_id)
            body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "ok"}
            decided = await approver.post(f"/v1/gates/{gate['gate']}/decision", json=body)
            assert decided.status_code == 200, decided.text
            assert (await finished(approver, run_id))["status"] == "completed"
    in_trace, by_id = run_trace(spans, run_id)
    derived = tracing.run_trace_id(run_id)
    done = spans.get_finished_spans()
    assert all(s.attributes.get(names.RUN_ID) == run_id for s in in_trace), [
        s.name for s in in_trace if s.attributes.get(names.RUN_ID) != run_id
    ]
    assert all(s.attributes.get(names.TENANT) == "acme" for s in in_trace)

    # The submission is the root, linked to the request (the caller's child) that asked for it.
    (root,) = [s for s in in_trace if s.parent is None]
    assert root.name == SUBMIT_SPAN
    (request,) = [s for s in done if s.name == "POST /v1/runs" and s.kind == SpanKind.SERVER]
    assert tracing.format_trace_id(request.context.trace_id) == CALLER_TRACE
    (link,) = root.links
    assert "POST /v1/runs" in [
        by_id[link.context.span_id].name,
        *ancestors(by_id[link.context.span_id], by_id),
    ]
    (workflow,) = [s for s in in_trace if s.name == "RunWorkflow:CompiledRunWorkflow"]
    assert ancestors(workflow, by_id) == ["StartWorkflow:CompiledRunWorkflow", SUBMIT_SPAN]

    # The gate: opened by the workflow, decided while it handled the decision's update.
    gates = [s for s in in_trace if s.name == GATE_SPAN]
    events = [(e.name, s) for s in gates for e in s.events]
    assert [name for name, _ in events] == [GATE_OPENED_EVENT, GATE_DECIDED_EVENT]
    opened, decision = (s for _, s in events)
    assert ancestors(opened, by_id)[0] == workflow.name
    assert ancestors(decision, by_id)[:2] == [UPDATE_SPAN, workflow.name]
    (handled,) = [s for s in in_trace if s.name == UPDATE_SPAN]
    assert handled.attributes[MESSAGE_NAME] == "decide_gate"
    # ... which links to the decision request's own trace, the request span its ancestor.
    (asked,) = handled.links
    decider = by_id[asked.context.span_id]
    assert decider.name == "HandleUpdate:decide_gate"
    assert "POST /v1/gates/{gate}/decision" in ancestors(decider, by_id)
    assert decider.context.trace_id != derived
    # The decision's event write is the run's too, under its handling.
    (wrote,) = [
        s
        for s in in_trace
        if ancestors(s, by_id)[:1] == [UPDATE_SPAN] and s.name.startswith("StartActivity:")
    ]
    assert wrote.name == f"StartActivity:{activity_names.EVENTS_APPEND}"

    # Every step ran in the trace, under the workflow: the gated one and the one after it too.
    steps = {
        s.attributes[names.STEP_ID]: s
        for s in in_trace
        if s.name == f"RunActivity:{activity_names.STEP_EXECUTE}"
    }
    assert set(steps) == {"prepare", "ship", "after"}
    for step in steps.values():
        assert ancestors(step, by_id)[1] == workflow.name
    assert decision.start_time < steps["ship"].start_time < steps["after"].start_time


async def test_a_gate_decided_by_signal_is_recorded_in_the_runs_trace(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        await handle.signal(
            CompiledRunWorkflow.decide_gate_signal, decision(await pending_gate(handle))
        )
        assert (await handle.result()).status == "completed"
    in_trace, by_id = run_trace(spans, handle.id)
    (decided,) = [s for s in in_trace for e in s.events if e.name == GATE_DECIDED_EVENT]
    assert ancestors(decided, by_id)[:2] == [SIGNAL_SPAN, "RunWorkflow:CompiledRunWorkflow"]
    (handled,) = [s for s in in_trace if s.name == SIGNAL_SPAN]
    assert handled.attributes[MESSAGE_NAME] == "decide_gate"
    assert handled.attributes[names.RUN_ID] == handle.id
    # The signal's own span (the sender's trace) is linked, not the parent.
    (asked,) = handled.links
    assert by_id[asked.context.span_id].name == "HandleSignal:decide_gate"
    assert asked.context.trace_id != tracing.run_trace_id(handle.id)
    assert not [s for s in in_trace if s.name == UPDATE_SPAN]


async def test_a_decision_on_another_worker_joins_the_same_workflow_span(
    spans: InMemorySpanExporter, temporal_env, task_queue, tmp_path
):
    """The worker that takes the run over replays it: the workflow span it finds (its id drawn
    from the workflow's own random) is the one the gate opened under on the first worker."""
    home = tmp_path / "home"
    async with phase("first worker"), engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        await idle(handle)
    async with phase("second worker"), engine(temporal_env, home, task_queue) as eng:
        handle = eng.client.get_workflow_handle_for(CompiledRunWorkflow.run, handle.id)
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        assert (await handle.result()).status == "completed"
    in_trace, by_id = run_trace(spans, handle.id)
    gates = {e.name: s for s in in_trace if s.name == GATE_SPAN for e in s.events}
    assert set(gates) == {GATE_OPENED_EVENT, GATE_DECIDED_EVENT}
    # The first worker may end (and so export) its copy of the workflow span as it evicts the
    # run on shutdown: the same span, by id, as the second worker's.
    (workflow,) = {
        s.context.span_id for s in in_trace if s.name == "RunWorkflow:CompiledRunWorkflow"
    }
    assert gates[GATE_OPENED_EVENT].parent.span_id == workflow
    update = by_id[gates[GATE_DECIDED_EVENT].parent.span_id]
    assert update.name == UPDATE_SPAN and update.parent.span_id == workflow
