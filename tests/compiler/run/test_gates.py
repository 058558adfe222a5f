"""Gate decisions without Temporal: who may decide, what a refusal fails, when timers fire."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from compiler.run import gates
from schemas.compiled import GateSpec
from schemas.events import Actor
from schemas.run import DecideGateInput, GateState, StepState
from tests.compiler.run.test_dag import node

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)
HASH = "sha256:" + "1" * 64
ALICE = Actor(id="alice", name="Alice", role="ops", kind="human")


def gate(status: str = "pending", **spec) -> GateState:
    fields = dict(
        gate_id="g",
        gated_step_keys=["b"],
        contract_hash=HASH,
        approver_role="ops",
        prompt="ok?",
        evidence=[],
        dedupe_key="g",
        reason="a person approves",
    )
    return GateState(
        spec=GateSpec(**(fields | spec)), status=status, approver_role="ops", requested_at=NOW
    )


def decide(decision: str, **fields) -> DecideGateInput:
    values = dict(
        gate_id="g", decision=decision, actor=ALICE, reason="looks wrong", contract_hash=HASH
    )
    return DecideGateInput(**(values | fields))


def test_a_rejection_fails_the_waiting_step_and_skips_its_dependents_only():
    nodes = [node("a", []), node("b", ["a"], gate="g"), node("c", ["b"]), node("d", ["a"])]
    states = {n.step_key: StepState(step_key=n.step_key) for n in nodes}
    states["a"] = states["a"].model_copy(update={"status": "done"})
    states["b"] = states["b"].model_copy(update={"status": "awaiting_approval"})
    rejected = gates.decided(gate(), decide("reject"), NOW)
    changed = gates.settle(nodes, states, {"g": rejected}, NOW)
    assert set(changed) == {"b", "c"}
    assert changed["b"].status == "error" and changed["b"].finished_at == NOW
    assert changed["b"].error.failure_class == "GATE_REJECTED"
    assert changed["b"].error.message == "alice (ops): looks wrong"
    assert changed["c"].skipped_because == "upstream step 'b' failed"
    # Pending or approved gates change nothing.
    for g in (gate(), gates.decided(gate(), decide("approve"), NOW)):
        assert gates.settle(nodes, states, {"g": g}, NOW) == {}


def test_changes_requested_is_its_own_failure_class():
    nodes = [node("b", [], gate="g")]
    states = {"b": StepState(step_key="b", status="awaiting_approval")}
    asked = gates.decided(gate(), decide("request_changes"), NOW)
    assert gates.settle(nodes, states, {"g": asked}, NOW)["b"].error.failure_class == (
        "GATE_CHANGES_REQUESTED"
    )


def test_refusals_name_what_is_wrong_and_accept_a_good_decision():
    g = {"g": gate()}
    assert gates.refusal(g, decide("approve"), finished=False) is None
    assert "has finished" in gates.refusal(g, decide("approve"), finished=True)
    assert "no gate 'x'" in gates.refusal(g, decide("approve", gate_id="x"), finished=False)
    wrong_hash = decide("approve", contract_hash="sha256:" + "2" * 64)
    assert "does not match" in gates.refusal(g, wrong_hash, finished=False)
    bob = Actor(id="bob", name="Bob", role="dev", kind="human")
    assert "may not decide" in gates.refusal(g, decide("approve", actor=bob), finished=False)
    assert "not been requested" in gates.refusal({"g": gate("dormant")}, decide("approve"), False)
    done = {"g": gates.decided(gate(), decide("approve"), NOW)}
    assert "already decided: approve by alice" in gates.refusal(done, decide("reject"), False)


def test_the_next_timer_is_the_earlier_of_deadline_and_reminder():
    g = gate(deadline_s=600, reminder_interval_s=120)
    assert gates.next_timer(g, NOW) == ("reminder", timedelta(seconds=120))
    soon = gate(deadline_s=60, reminder_interval_s=120)
    assert gates.next_timer(soon, NOW) == ("deadline", timedelta(seconds=60))
    # Overdue: fire at once (a 1 ms timer), never with a negative delay.
    assert gates.next_timer(soon, NOW + timedelta(seconds=90)) == (
        "deadline",
        timedelta(milliseconds=1),
    )
    assert gates.next_timer(gate(), NOW) is None
    assert gates.next_timer(gate("approved", deadline_s=600), NOW) is None


def test_a_decision_reaching_the_run_after_its_sender_stopped_waiting_is_refused():
    assert gates.too_late(decide("approve"), NOW) is None  # no deadline: as before
    waiting = decide("approve", not_after=NOW)
    assert gates.too_late(waiting, NOW) is None
    late = gates.too_late(waiting, NOW + timedelta(milliseconds=1))
    assert late is not None and "after its sender stopped waiting" in late
