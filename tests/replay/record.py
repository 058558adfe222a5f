"""Record workflow histories of real runs into tests/replay/histories/ (run by hand, committed).

    .venv/bin/python -m tests.replay.record [--tag TAG] [NAME ...]

A history is never re-recorded over: a change to the workflow must keep every committed history
replaying (see docs/versioning.md). To pin the command sequence of a reshaped workflow, record
its scenarios under a tag (`--tag engine3` writes NAME.engine3.json next to the older ones).
"""

import asyncio
import sys
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any
from uuid import uuid4

from temporalio.client import WorkflowFailureError, WorkflowHandle

from schemas.budget import BudgetLimits, ExtendBudgetInput
from schemas.scope import Scope
from tests.temporal_env import temporal_test_env
from tests.workflows.engine import (
    Engine,
    billing_inputs,
    billing_plan,
    engine,
    wait_for_event,
)
from tests.workflows.model_env import model_engine
from tests.workflows.plans import code_step, plan, write_json
from tests.workflows.test_budgets import (
    OPS,
    PER_STEP,
    independent,
    profile,
    seed_usage,
    wait_status,
)
from tests.workflows.test_gates import OPS as OPS_GATE
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from workers.services import runs
from workers.settings import Settings
from workflows.run import CompiledRunWorkflow

HISTORIES = Path(__file__).parent / "histories"


async def _demo(eng: Engine, tmp: Path) -> WorkflowHandle:
    handle = await eng.start(billing_plan(), billing_inputs(tmp))
    await handle.result()
    return handle


async def _demo_gated(eng: Engine, tmp: Path) -> WorkflowHandle:
    """The billing demo with a person approving the correction candidates before the report."""
    doc = billing_plan()
    for step in doc["steps"]:
        if step["step_key"] == "render_report":
            step["approval"] = {"approver_role": "ops", "prompt": "Send the corrections?"}
    handle = await eng.start(doc, billing_inputs(tmp))
    gate = await pending_gate(handle, "gate-render_report")
    await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
    await handle.result()
    return handle


async def _gated(eng: Engine, tmp: Path) -> WorkflowHandle:
    handle = await eng.start(gated_plan())
    gate = await pending_gate(handle)
    await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
    await handle.result()
    return handle


async def _failed(eng: Engine, tmp: Path) -> WorkflowHandle:
    doc = plan(
        code_step("boom", "raise SystemExit('bad data')", ["output/x.json"]),
        code_step(
            "next",
            write_json("output/y.json"),
            ["output/y.json"],
            depends_on=["boom"],
            reads=["output/x.json"],
        ),
        code_step(
            "last",
            write_json("output/z.json"),
            ["output/z.json"],
            depends_on=["next"],
            reads=["output/y.json"],
        ),
    )
    handle = await eng.start(doc)
    await handle.result()
    return handle


async def _cancelled(eng: Engine, tmp: Path) -> WorkflowHandle:
    doc = plan(
        code_step("first", write_json("output/a.json"), ["output/a.json"]),
        code_step(
            "slow",
            "import time\ntime.sleep(60)\n" + write_json("output/b.json"),
            ["output/b.json"],
            depends_on=["first"],
            reads=["output/a.json"],
        ),
    )
    handle = await eng.start(doc)
    await wait_for_event(eng.services.events, handle.id, "step.started.v1", "slow")
    await handle.cancel()
    try:
        await handle.result()
    except WorkflowFailureError:
        pass
    return handle


async def _budget_exhausted(eng: Engine, tmp: Path) -> WorkflowHandle:
    """Blocked by its token cap after one step, extended by update, then completed."""
    run_id = runs.new_run_id()
    for i in range(3):
        seed_usage(eng.services.events, run_id, f"s{i}")
    handle = await eng.start(
        independent(3),
        run_id=run_id,
        profile_document=profile(max_parallel_steps=1),
        budget=BudgetLimits(max_tokens=PER_STEP),
    )
    await wait_status(handle, "budget_exhausted")
    await handle.execute_update(
        CompiledRunWorkflow.extend_budget,
        ExtendBudgetInput(tokens=5 * PER_STEP, actor=OPS, reason="recorded extension"),
    )
    await handle.result()
    return handle


async def _objective_seeded(eng: Engine, tmp: Path) -> WorkflowHandle:
    """An objective matched to the billing-audit recipe (stops at its first model step)."""
    handle = await eng.start_objective(
        "reconcile the invoices against the rate cards and flag billing discrepancies"
    )
    await handle.result()
    return handle


async def _loop_until_dry(eng: Engine, tmp: Path) -> WorkflowHandle:
    """A `loop: until-dry` step that goes dry on its third pass."""
    step = code_step(
        "sweep",
        "n = int(open('meta/iteration').read())\n"
        "open('output/found.json', 'w').write('{\"pass\": %d}' % n)\n"
        "open('work/note.md', 'w').write('no new findings' if n == 3 else 'found more')\n",
        ["output/found.json"],
    )
    step["loop"] = {"mode": "until-dry", "max": 5}
    handle = await eng.start(plan(step))
    await handle.result()
    return handle


async def _sub_recipe(eng: Engine, tmp: Path) -> WorkflowHandle:
    """A `uses:` step: recipes__plan, then the sub-recipe as a child run (which fails)."""
    from tests.workflows.test_sub_recipes import calling, recipe

    recipe(eng.settings.home, "inner", "done-when: the inner work is written\nDo the inner work.")
    handle = await eng.start(calling("inner", "outer"))
    await handle.result()
    return handle


async def _gate_escalated(eng: Engine, tmp: Path) -> WorkflowHandle:
    """A gate's deadline timer escalates it to another role, who approves."""
    handle = await eng.start(
        gated_plan(
            {
                "approver_role": "ops",
                "prompt": "Ship it?",
                "deadline_s": 1,
                "on_timeout": "escalate",
                "escalate_to_role": "director",
            }
        )
    )
    while not (gate := await pending_gate(handle)).escalated:
        await asyncio.sleep(0.2)
    director = OPS_GATE.model_copy(update={"role": "director"})
    await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate, actor=director))
    await handle.result()
    return handle


SCENARIOS: dict[str, Callable[[Engine, Path], Awaitable[WorkflowHandle]]] = {
    "billing_demo": _demo,
    "billing_demo_gated": _demo_gated,
    "gated_approved": _gated,
    "failed_with_skips": _failed,
    "cancelled_in_flight": _cancelled,
    "budget_exhausted_extended": _budget_exhausted,
    "objective_seeded": _objective_seeded,
    "loop_until_dry": _loop_until_dry,
    "sub_recipe_child": _sub_recipe,
    "gate_escalated": _gate_escalated,
}


async def _model_planned(eng: Engine, tmp: Path) -> WorkflowHandle:
    """An objective no recipe matches clearly: compile__plan, then model-written code steps."""
    from tests.workflows.test_model_runs import OBJECTIVE, SALES

    sales = tmp / "sales.csv"
    sales.write_text(SALES)
    ref = eng.services.artifacts.put_file(Scope.default(), sales, logical_path="input/sales.csv")
    # The planner call and the model steps go to the provider's queue (model-queues-v1).
    handle = await eng.start_objective(
        OBJECTIVE, inputs={"sales": ref}, planner_provider="anthropic"
    )
    await handle.result()
    return handle


async def _cancelled_planning(eng: Engine, tmp: Path) -> WorkflowHandle:
    """An objective cancelled while its planner call is held: compile__plan stops, then
    run.cancelled (front-end-cancel-v1)."""
    from tests.workflows.test_model_runs import OBJECTIVE

    handle = await eng.start_objective(OBJECTIVE)
    for _ in range(400):
        described = await handle.describe()
        pending = described.raw_description.pending_activities
        if any(a.activity_type.name == "compile__plan" for a in pending):
            break
        await asyncio.sleep(0.25)
    await handle.cancel()
    try:
        await handle.result()
    except WorkflowFailureError:
        return handle
    raise AssertionError("the cancelled run completed")


def _model_script(name: str) -> list[dict[str, Any]] | None:
    """The Messages server script of a scenario that runs with a model, or None."""
    if name == "model_planned":
        from tests.workflows.test_model_runs import SCRIPT

        return SCRIPT
    if name == "cancelled_planning":  # the planner's answer held far longer than a cancel takes
        from tests.workflows.model_env import text

        return [{"when": {"consumer": "planner"}, "delay_s": 60, "response": text("{}")}]
    return None


SCENARIOS["model_planned"] = _model_planned


async def _capsule_sealed(eng: Engine, tmp: Path) -> WorkflowHandle:
    """The billing demo's capsule on its data again: capsule__instantiate, no compile passes."""
    from tests.workflows.test_capsules import prepare, services
    from workers.services.capsules import extract_run

    inputs = billing_inputs(tmp)
    source = await (await eng.start(billing_plan(), inputs)).result()
    extract_run(services(eng), Scope.default(), source.run_id, "billing")
    prepared = prepare(eng, "billing", inputs, roots=(tmp,))
    handle = await runs.start_run(eng.client, eng.settings, prepared.run)
    await handle.result()
    return handle


async def _scheduled_once(eng: Engine, tmp: Path) -> WorkflowHandle:
    """One scheduled time of a schedule, backfilled: claimed, then its capsule run as a child."""
    from datetime import UTC, datetime

    from tests.workflows.test_capsules import services
    from tests.workflows.test_schedules import PLAN, request, sales
    from workers.services import schedules
    from workers.services.capsules import extract_run

    source = await eng.run(PLAN, {"sales": sales(tmp / "seed" / "sales.csv", "seed")})
    extract_run(services(eng), Scope.default(), source.run_id, "counter")
    template = str(sales(tmp / "same" / "sales.csv", "same"))
    await schedules.create(
        eng.client,
        eng.settings.task_queue,
        eng.services.capsules,
        Scope.default(),
        request("daily", template, cron="0 6 * * *"),
    )
    await schedules.backfill(
        eng.client,
        eng.services.claims,
        Scope.default(),
        "daily",
        datetime(2026, 11, 2, 0, tzinfo=UTC),
        datetime(2026, 11, 2, 12, tzinfo=UTC),
    )
    scheduled = eng.client.get_workflow_handle("scheduled-daily-2026-11-02T06:00:00Z")
    for _ in range(400):
        try:
            await scheduled.result()
            return scheduled
        except Exception:  # noqa: BLE001 - not started yet
            await asyncio.sleep(0.25)
    raise AssertionError("the scheduled run never finished")


# Scenarios recorded once their feature existed (engine5 on): not part of the engine2/3 sets.
LATER: dict[str, Callable[[Engine, Path], Awaitable[WorkflowHandle]]] = {
    "capsule_sealed": _capsule_sealed,
    "scheduled_once": _scheduled_once,
    "cancelled_planning": _cancelled_planning,
}


async def record(names: list[str], tag: str | None = None) -> None:
    HISTORIES.mkdir(exist_ok=True)
    async with temporal_test_env() as env:
        for name in names:
            with tempfile.TemporaryDirectory() as tmp:
                home, queue, script = Path(tmp) / "home", f"record-{uuid4()}", _model_script(name)
                if script is not None:
                    async with model_engine(env, home, queue, script) as (eng, _server):
                        handle = await {**SCENARIOS, **LATER}[name](eng, Path(tmp))
                        history = await handle.fetch_history()
                else:
                    settings = Settings(home=home, task_queue=queue, input_roots=(Path(tmp),))
                    async with engine(env, home, queue, settings=settings) as eng:
                        handle = await {**SCENARIOS, **LATER}[name](eng, Path(tmp))
                        history = await handle.fetch_history()
            path = HISTORIES / (f"{name}.{tag}.json" if tag else f"{name}.json")
            if path.exists():
                raise SystemExit(f"{path} exists: committed histories are never re-recorded")
            path.write_text(history.to_json())
            print(f"recorded {path.name}: {len(history.events)} events")


if __name__ == "__main__":
    args = sys.argv[1:]
    tag = None
    if args[:1] == ["--tag"]:
        tag, args = args[1], args[2:]
    asyncio.run(record(args or list(SCENARIOS), tag))
