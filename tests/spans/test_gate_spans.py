"""A gate's wait on the run's trace: one `gate.opened` and one `gate.decided` event, even when
another worker takes the run over mid-wait and when the whole history is replayed."""

from temporalio.worker import Replayer

from activities.telemetry import RUN_ID, TENANT
from tests.spans.conftest import by_name
from tests.workflows.engine import engine
from tests.workflows.test_gates import OPS, decision, gated_plan, pending_gate
from tests.workflows.test_gates_durability import idle, phase
from workers.plugin import ForgePlugin
from workflows.run import CompiledRunWorkflow

SECRET_ROLE = "ops-sk_live_4eC39HqLyjWDarjtT1zdp7dc"
APPROVER = OPS.model_copy(update={"role": SECRET_ROLE})


def _gate_events(spans) -> list[tuple[str, dict]]:
    return [
        (event.name, dict(event.attributes or {}))
        for span in by_name(spans, "forge.gate")
        for event in span.events
    ]


async def test_a_gate_records_its_opening_and_decision_once(
    temporal_env, task_queue, tmp_path, spans
):
    home = tmp_path / "home"
    plan = gated_plan({"approver_role": SECRET_ROLE, "prompt": "Ship it?"})
    async with phase("first worker"), engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(plan)
        gate = await pending_gate(handle)
        await idle(handle)
    [(name, opened)] = _gate_events(spans)
    assert name == "gate.opened"
    assert opened[RUN_ID] == handle.id and opened[TENANT] == "default"
    assert opened["forge.gate.id"] == "gate-ship"
    # A role is plan text: it passes the guard's masking before it is exported.
    assert opened["forge.gate.approver_role"] == "ops-[REDACTED:stripe-access-token]"

    # Another worker takes the run over: it replays the opening and must not record it again.
    async with phase("second worker"), engine(temporal_env, home, task_queue) as eng:
        handle = eng.client.get_workflow_handle_for(CompiledRunWorkflow.run, handle.id)
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate, actor=APPROVER))
        result = await handle.result()
        history = await handle.fetch_history()
    assert result.status == "completed"
    events = _gate_events(spans)
    assert [n for n, _ in events] == ["gate.opened", "gate.decided"]
    decided = events[1][1]
    assert decided["forge.gate.decision"] == "approve"
    assert decided["forge.gate.decided_by"] == "human"
    assert decided["forge.gate.wait_s"] >= 0
    assert decided["forge.gate.id"] == "gate-ship" and decided[RUN_ID] == handle.id

    # Replaying the whole history records nothing.
    await Replayer(workflows=[], plugins=[ForgePlugin()]).replay_workflow(history)
    assert [n for n, _ in _gate_events(spans)] == ["gate.opened", "gate.decided"]
    assert "sk_live_" not in "".join(s.to_json() for s in spans.get_finished_spans())
