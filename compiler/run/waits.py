"""The transitions of what a run waits on: its gates and its budget (pure, like state.py).

A gate opens when its step is otherwise ready and closes on a decision or its deadline; the
budget is checked at every start against recorded spend and blocks the run (never fails it)
until an extension makes room. Both bump the state's version when a person acts, which wakes
the DAG loop.
"""

from collections.abc import Collection
from datetime import datetime

from compiler import budget as budgetbook
from compiler.run import gates as gatebook
from compiler.run.state import RunState, step_awaiting, update_gate, update_steps
from schemas.budget import BudgetExtension, StepProjection
from schemas.run import DecideGateInput, StepNode

__all__ = [
    "budget_blocked",
    "budget_extended",
    "budget_unblocked",
    "gate_decided",
    "gate_escalated",
    "gate_reminded",
    "gate_requested",
    "gates_settled",
    "reserved",
    "start_refusal",
]


def reserved(state: RunState, running: Collection[str]) -> list[StepProjection]:
    """Projections of the steps in flight: what they may still spend is not free."""
    return [n.projected for n in state.nodes if n.step_key in running]


def start_refusal(state: RunState, node: StepNode, running: Collection[str]) -> str | None:
    """Why the budget refuses to start this step (or its next pass) now, if it does."""
    return budgetbook.start_refusal(
        state.budget, node.step_key, node.projected, reserved=reserved(state, running)
    )


# --- gates ------------------------------------------------------------------------------------


def gate_requested(state: RunState, node: StepNode, now: datetime) -> RunState:
    """The gate of an otherwise ready step is requested; the step awaits approval."""
    assert node.gate_id is not None
    state = update_gate(state, node.gate_id, status="pending", requested_at=now)
    return step_awaiting(state, node.step_key)


def gate_decided(state: RunState, inp: DecideGateInput, now: datetime) -> RunState:
    """A person's decision recorded on its gate (the validator refused what does not apply)."""
    gates = {**state.gates, inp.gate_id: gatebook.decided(state.gates[inp.gate_id], inp, now)}
    return state.model_copy(update={"gates": gates, "version": state.version + 1})


def gates_settled(state: RunState, now: datetime) -> RunState:
    """A rejected gate fails its waiting steps, and so skips their dependents."""
    return update_steps(state, gatebook.settle(state.nodes, state.states, state.gates, now))


def gate_reminded(state: RunState, gate_id: str) -> RunState:
    """One more reminder sent for a pending gate."""
    return update_gate(state, gate_id, reminders=state.gates[gate_id].reminders + 1)


def gate_escalated(state: RunState, gate_id: str) -> RunState:
    """The gate's deadline passed: its escalation role decides now."""
    spec = state.gates[gate_id].spec
    return update_gate(state, gate_id, escalated=True, approver_role=spec.escalate_to_role)


# --- the budget -------------------------------------------------------------------------------


def budget_extended(state: RunState, extension: BudgetExtension) -> RunState:
    """The caps raised by an accepted extension."""
    budget = budgetbook.extended(state.budget, extension)
    return state.model_copy(update={"budget": budget, "version": state.version + 1})


def budget_blocked(state: RunState, refused: dict[str, str]) -> tuple[RunState, bool]:
    """The run blocks (never fails) on its budget; whether it is a new exhaustion to record.

    Still short after an extension (the same steps refused): the same block with an up-to-date
    reason, nothing new to record.
    """
    reason = next(iter(refused.values()))
    budget = state.budget
    if budget.status == "exhausted" and budget.blocked_steps == sorted(refused):
        budget = budget.model_copy(update={"blocked_reason": reason})
        return state.model_copy(update={"budget": budget, "status": "budget_exhausted"}), False
    budget = budget.model_copy(
        update={
            "status": "exhausted",
            "blocked_reason": reason,
            "blocked_steps": sorted(refused),
            "exhaustions": budget.exhaustions + 1,
        }
    )
    return state.model_copy(update={"budget": budget, "status": "budget_exhausted"}), True


def budget_unblocked(state: RunState) -> RunState:
    """Something could start again: the run is no longer blocked on its budget."""
    if state.budget.status != "exhausted":
        return state
    budget = state.budget.model_copy(
        update={"status": "ok", "blocked_reason": None, "blocked_steps": []}
    )
    return state.model_copy(update={"budget": budget, "status": "running"})
