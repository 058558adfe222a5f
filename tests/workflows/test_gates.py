"""Human gates: structure, decisions by update or signal, refusals, dedupe, deadlines, reminders."""

import asyncio

import pytest
from temporalio.client import WorkflowUpdateFailedError

from activities.compile.typelib import load_profiles
from schemas.events import Actor
from schemas.run import DecideGateInput, GateState
from tests.workflows.engine import engine
from tests.workflows.plans import code_step, plan, write_json
from workflows.run import CompiledRunWorkflow

OPS = Actor(id="ana", name="Ana Ops", role="ops", kind="human")


def gated_plan(approval: dict | None = None, *, second: bool = False) -> dict:
    a = code_step("prepare", write_json("output/a.json"), ["output/a.json"])
    b = code_step(
        "ship",
        write_json("output/b.json"),
        ["output/b.json"],
        depends_on=["prepare"],
        reads=["output/a.json"],
    )
    b["approval"] = approval or {"approver_role": "ops", "prompt": "Ship it?"}
    c = code_step(
        "after",
        write_json("output/c.json"),
        ["output/c.json"],
        depends_on=["ship"],
        reads=["output/b.json"],
    )
    steps = [a, b, c]
    if second:
        d = code_step(
            "ship2",
            write_json("output/d.json"),
            ["output/d.json"],
            depends_on=["prepare"],
            reads=["output/a.json"],
        )
        d["approval"] = approval
        steps.append(d)
    return plan(*steps)


async def pending_gate(handle, gate_id: str = "gate-ship") -> GateState:
    for _ in range(400):
        view = await handle.query(CompiledRunWorkflow.status)
        for gate in view.gates:
            if gate.spec.gate_id == gate_id and gate.status == "pending":
                return gate
        await asyncio.sleep(0.05)
    raise AssertionError(f"{gate_id} never became pending")


def decision(
    gate: GateState, verdict: str = "approve", actor: Actor = OPS, **over
) -> DecideGateInput:
    fields = {
        "gate_id": gate.spec.gate_id,
        "decision": verdict,
        "actor": actor,
        "reason": "checked the evidence",
        "contract_hash": gate.spec.contract_hash,
    }
    return DecideGateInput(**{**fields, **over})


async def test_approve_by_update_runs_the_gated_step(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        view = await handle.query(CompiledRunWorkflow.status)
        states = {s.step_key: s.status for s in view.steps}
        assert states == {"prepare": "done", "ship": "awaiting_approval", "after": "pending"}
        assert gate.spec.evidence == ["output/a.json"] and gate.spec.prompt == "Ship it?"
        recorded = await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        assert recorded.decision == "approve" and recorded.actor.id == "ana"
        result = await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed"
    assert result.gates["gate-ship"].status == "approved"
    decided = [e for e in events if e.type == "gate.decided.v1"]
    assert len(decided) == 1 and decided[0].scope.actor.id == "ana"
    assert decided[0].payload["reason"] == "checked the evidence"
    assert [e.type for e in events].count("gate.requested.v1") == 1


async def test_reject_fails_the_step_and_skips_dependents(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        await handle.execute_update(
            CompiledRunWorkflow.decide_gate, decision(gate, "reject", reason="numbers look wrong")
        )
        result = await handle.result()
    assert result.status == "failed"
    err = result.steps["ship"].error
    assert err.failure_class == "GATE_REJECTED" and "numbers look wrong" in err.message
    assert result.skipped_steps == {"after": "upstream step 'ship' failed"}


async def test_refused_decisions_change_nothing(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        bad = [
            (decision(gate, gate_id="gate-nope"), "no gate 'gate-nope'"),
            (decision(gate, contract_hash="sha256:" + "0" * 64), "does not match"),
            (decision(gate, actor=OPS.model_copy(update={"role": "intern"})), "may not decide"),
        ]
        for inp, words in bad:
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await handle.execute_update(CompiledRunWorkflow.decide_gate, inp)
            assert words in str(err.value.cause)
        assert (await pending_gate(handle)).status == "pending"
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate, "reject"))
        assert "already decided" in str(err.value.cause)
        result = await handle.result()
    assert result.status == "completed"


async def test_signal_decides_and_a_refused_signal_is_recorded(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        await handle.signal(
            CompiledRunWorkflow.decide_gate_signal,
            decision(gate, actor=OPS.model_copy(update={"role": "intern"})),
        )
        await handle.signal(CompiledRunWorkflow.decide_gate_signal, decision(gate))
        result = await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed"
    refused = [e for e in events if e.type == "gate.decision_refused.v1"]
    assert len(refused) == 1 and "may not decide" in refused[0].payload["refused_because"]


async def test_steps_sharing_a_dedupe_key_share_one_gate(temporal_env, task_queue, tmp_path):
    approval = {"approver_role": "ops", "dedupe_key": "release", "prompt": "Release both?"}
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan(approval, second=True))
        gate = await pending_gate(handle, "gate-release")
        assert sorted(gate.spec.gated_step_keys) == ["ship", "ship2"]
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        result = await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed"
    assert [e.type for e in events].count("gate.requested.v1") == 1


async def test_deadline_rejects_and_escalation_moves_the_gate(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        timed = await eng.run(gated_plan({"approver_role": "ops", "deadline_s": 1}))
        assert timed.steps["ship"].error.failure_class == "GATE_REJECTED"
        assert "deadline" in timed.steps["ship"].error.message
        handle = await eng.start(
            gated_plan(
                {
                    "approver_role": "ops",
                    "deadline_s": 1,
                    "on_timeout": "escalate",
                    "escalate_to_role": "director",
                }
            )
        )
        gate = await pending_gate(handle)
        for _ in range(600):  # a minute, for a loaded machine
            gate = next(g for g in (await handle.query(CompiledRunWorkflow.status)).gates)
            if gate.escalated:
                break
            await asyncio.sleep(0.1)
        assert gate.approver_role == "director"
        with pytest.raises(WorkflowUpdateFailedError):
            await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        boss = Actor(id="dee", name="Dee", role="director", kind="human")
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate, actor=boss))
        result = await handle.result()
        events = eng.services.events.list_events(run_id=handle.id)
    assert result.status == "completed"
    assert any(e.type == "gate.escalated.v1" for e in events)


async def test_reminders_are_durable_timers_that_emit_events(temporal_env, task_queue, tmp_path):
    layers, _ = load_profiles()
    profile = layers.builtin["default"].model_dump(mode="json")
    profile.update(profile_id="reminding")
    profile["hitl"]["reminder_interval_s"] = 1
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan(), profile_document=profile)
        gate = await pending_gate(handle)
        for _ in range(600):  # a minute, for a loaded machine
            events = eng.services.events.list_events(run_id=handle.id)
            if sum(e.type == "gate.reminder.v1" for e in events) >= 2:
                break
            await asyncio.sleep(0.1)
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        await handle.result()
        reminders = [
            e
            for e in eng.services.events.list_events(run_id=handle.id)
            if e.type == "gate.reminder.v1"
        ]
    assert len(reminders) >= 2
    assert [e.payload["reminder"] for e in reminders] == list(range(1, len(reminders) + 1))


async def test_gate_step_kind_and_deciding_a_finished_run(temporal_env, task_queue, tmp_path):
    gate = code_step("signoff", "", [], depends_on=["prepare"])
    gate.update(kind="gate", code=None, approval={"approver_role": "ops"})
    doc = plan(
        code_step("prepare", write_json("output/a.json"), ["output/a.json"]),
        gate,
        code_step("after", write_json("output/c.json"), ["output/c.json"], depends_on=["signoff"]),
    )
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(doc)
        pending = await pending_gate(handle, "gate-signoff")
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(pending))
        result = await handle.result()
        assert result.status == "completed" and result.steps["signoff"].status == "done"
        with pytest.raises(Exception) as err:  # the workflow is closed: no update can land
            await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(pending))
        assert "completed" in str(err.value).lower() or "finished" in str(err.value).lower()
