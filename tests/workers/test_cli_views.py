"""The run views render every state a step can be in, and say what a waiting run waits for."""

import typing

import pytest
from rich.console import Console

from schemas.compiled import GateSpec
from schemas.run import GateState, RunStatusView, StepState, StepStatus
from workers.cli.views import STEP_STYLES, steps_table, view_lines, waiting_lines


def rendered(*renderables: object) -> str:
    console = Console(width=120, record=True, color_system=None)
    for r in renderables:
        console.print(r)
    return console.export_text()


def pending_gate_state() -> GateState:
    spec = GateSpec(
        gate_id="gate-ship",
        gated_step_keys=["ship"],
        contract_hash="sha256:" + "0" * 64,
        approver_role="ops",
        prompt="Ship it?",
        evidence=["output/a.json"],
        dedupe_key="ship",
        reason="the plan asks for approval",
    )
    return GateState(spec=spec, status="pending", approver_role="ops")


def test_every_step_status_has_a_style():
    assert set(STEP_STYLES) == set(typing.get_args(StepStatus))


@pytest.mark.parametrize("status", typing.get_args(StepStatus))
def test_a_step_in_any_status_renders(status: str):
    # An unstyled status ("awaiting_approval") once made the table's markup "[]…[/]": a
    # MarkupError traceback from `forge status`, and a frozen live view under `forge run`.
    text = rendered(steps_table([StepState(step_key="s[1]", status=status)]))
    assert status in text and "s[1]" in text


def test_a_waiting_run_says_what_it_waits_for_who_decides_and_how():
    gate: GateState = pending_gate_state()
    view = RunStatusView(
        run_id="run-1",
        status="running",
        plan_hash=None,
        generation=0,
        steps=[StepState(step_key="ship", status="awaiting_approval")],
        order=["ship"],
        gates=[gate],
    )
    text = rendered(*view_lines(view))
    assert "waiting at gate-ship (step ship) for a decision by role ops: Ship it?" in text
    assert "forge approve run-1 gate-ship --as NAME --role ops --reason TEXT" in text
    assert "forge reject run-1 gate-ship --as NAME --role ops --reason TEXT" in text
    decided = view.model_copy(update={"gates": [gate.model_copy(update={"status": "approved"})]})
    assert waiting_lines(decided) == []
    # A role from a (possibly model-written) plan is quoted in the command shown to paste.
    hostile = view.model_copy(
        update={"gates": [gate.model_copy(update={"approver_role": "ops; rm -rf ~"})]}
    )
    assert "--role 'ops; rm -rf ~' --reason TEXT" in rendered(*view_lines(hostile))
