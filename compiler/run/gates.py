"""Gate decisions of a run, pure: who may decide what, when timers fire, what a refusal fails."""

from collections.abc import Mapping, Sequence
from datetime import datetime, timedelta

from compiler.run.dag import WAITING, skip_dependents
from schemas.error_codes import ErrorCode
from schemas.run import DecideGateInput, GateDecision, GateState, StepError, StepNode, StepState

DECIDED = ("approved", "rejected", "changes_requested")
STATUS_OF = {"approve": "approved", "reject": "rejected", "request_changes": "changes_requested"}
FAILURE_OF = {
    "rejected": ErrorCode.GATE_REJECTED,
    "changes_requested": ErrorCode.GATE_CHANGES_REQUESTED,
}


def refusal(gates: Mapping[str, GateState], inp: DecideGateInput, finished: bool) -> str | None:
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


def too_late(inp: DecideGateInput, now: datetime) -> str | None:
    """Why a decision whose sender has stopped waiting must be refused, or None."""
    if inp.not_after is None or now <= inp.not_after:
        return None
    return (
        f"the decision reached the run at {now.isoformat()}, after its sender stopped waiting "
        f"({inp.not_after.isoformat()}) and was told nothing was decided; send it again"
    )


def decided(gate: GateState, inp: DecideGateInput, now: datetime) -> GateState:
    """The gate with the decision recorded."""
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


def settle(
    nodes: Sequence[StepNode],
    states: Mapping[str, StepState],
    gates: Mapping[str, GateState],
    now: datetime,
) -> dict[str, StepState]:
    """The new states after refused gates: their waiting steps fail, and their dependents skip.

    A rejected (or changes-requested) gate fails each of its steps still waiting to start, with
    the decider and their reason; whatever depends on those steps is skipped.
    """
    current = dict(states)
    changed: dict[str, StepState] = {}
    for node in nodes:
        if node.gate_id is None:
            continue
        gate = gates[node.gate_id]
        state = current[node.step_key]
        if gate.status not in FAILURE_OF or state.status not in WAITING:
            continue
        d = gate.decision
        who = f"{d.actor.id} ({d.actor.role})" if d else "the gate"
        failed = state.model_copy(
            update={
                "status": "error",
                "finished_at": now,
                "error": StepError(
                    failure_class=FAILURE_OF[gate.status],
                    message=f"{who}: {d.reason if d else gate.status}",
                ),
            }
        )
        current[node.step_key] = changed[node.step_key] = failed
        skipped = skip_dependents(nodes, current, node.step_key)
        current.update(skipped)
        changed.update(skipped)
    return changed
