"""Gate bookkeeping for CompiledRunWorkflow: who may decide what, and when (pure, deterministic)."""

from datetime import datetime, timedelta

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from schemas.run import DecideGateInput, GateDecision, GateState

DECIDED = ("approved", "rejected", "changes_requested")
STATUS_OF = {"approve": "approved", "reject": "rejected", "request_changes": "changes_requested"}
FAILURE_OF = {"rejected": "GATE_REJECTED", "changes_requested": "GATE_CHANGES_REQUESTED"}


def refusal(gates: dict[str, GateState], inp: DecideGateInput, finished: bool) -> str | None:
    """Why a decision cannot be accepted, or None. Nothing changes when it is refused."""
    if finished:
        return "the run has finished; there is no gate left to decide"
    gate = gates.get(inp.gate_id)
    if gate is None:
        known = ", ".join(sorted(gates)) or "none"
        return f"no gate {inp.gate_id!r} in this run (gates: {known})"
    if gate.status in DECIDED and gate.decision is not None:
        d = gate.decision
        return (
            f"gate {inp.gate_id} was already decided: {d.decision} by {d.actor.id} "
            f"({d.actor.role}) at {d.decided_at.isoformat()}"
        )
    if gate.status == "dormant":
        return f"gate {inp.gate_id} has not been requested yet: its steps are not ready to run"
    if inp.contract_hash != gate.spec.contract_hash:
        return (
            f"contract hash {inp.contract_hash} does not match the gated step's "
            f"{gate.spec.contract_hash}; look at the gate again (`forge gates`) and decide "
            "on what will actually run"
        )
    if inp.actor.role != gate.approver_role:
        return (
            f"role {inp.actor.role!r} may not decide gate {inp.gate_id}; it needs "
            f"{gate.approver_role!r}"
        )
    return None


def decided(gate: GateState, inp: DecideGateInput, now: datetime) -> GateState:
    decision = GateDecision(
        gate_id=inp.gate_id,
        decision=inp.decision,
        actor=inp.actor,
        reason=inp.reason,
        contract_hash=inp.contract_hash,
        decided_at=now,
    )
    return gate.model_copy(update={"status": STATUS_OF[inp.decision], "decision": decision})


def next_timer(gate: GateState, now: datetime) -> tuple[str, timedelta] | None:
    """The gate's next durable timer: its deadline or its next reminder, whichever is first."""
    if gate.status != "pending" or gate.requested_at is None:
        return None
    due: list[tuple[timedelta, str]] = []
    if gate.spec.deadline_s and not gate.escalated:
        due.append((gate.requested_at + timedelta(seconds=gate.spec.deadline_s) - now, "deadline"))
    if gate.spec.reminder_interval_s:
        at = gate.requested_at + timedelta(seconds=gate.spec.reminder_interval_s) * (
            gate.reminders + 1
        )
        due.append((at - now, "reminder"))
    if not due:
        return None
    delay, kind = min(due)
    return kind, max(delay, timedelta(milliseconds=1))
