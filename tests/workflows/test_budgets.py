"""Layered budgets: run caps against recorded usage, blocking, extension, pre-checks, tool budgets.

Usage comes from the ledger the model layer writes (model.called.v1 / tool.called.v1 events in the
step's stream). The model layer is not built yet, so these tests append exactly those events to the
real event store for a run id chosen up front; everything after that is the real harness, workflow
and store.
"""

import asyncio
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.service import RPCError

from activities.compile.typelib import load_profiles
from activities.store.events import EventStore
from schemas.budget import MODEL_CALLED, TOOL_CALLED, BudgetLimits, ExtendBudgetInput
from schemas.events import Actor, EventDraft
from schemas.run import RunStatusView
from tests.workflows.engine import engine, wait_for_event
from tests.workflows.plans import code_step, plan, write_json
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from workers.services import runs
from workflows.run import CompiledRunWorkflow

OPS = Actor(id="ana", name="Ana Ops", role="ops", kind="human")
PER_STEP = 400  # tokens each seeded step records


def seed_usage(
    events: EventStore,
    run_id: str,
    step_key: str,
    *,
    tokens: int = PER_STEP,
    cost: float = 0.01,
    attempt: int = 1,
    tools: int = 0,
    bridge: int = 0,
) -> None:
    """What the model layer records for one step attempt: one model call and its tool calls."""
    now = datetime.now(UTC)
    drafts = [
        EventDraft(
            event_id=f"{run_id}:{MODEL_CALLED}:{step_key}:{attempt}",
            type=MODEL_CALLED,
            run_id=run_id,
            caused_by=f"{run_id}:seed",
            timestamp=now,
            payload={
                "step_key": step_key,
                "attempt": attempt,
                "model": "anthropic:claude-sonnet-4-6",
                "input_tokens": tokens * 3 // 4,
                "output_tokens": tokens - tokens * 3 // 4,
                "cost_usd": cost,
            },
        )
    ]
    for i, channel in [(i, "executor") for i in range(tools)] + [
        (i, "bridge") for i in range(bridge)
    ]:
        drafts.append(
            EventDraft(
                event_id=f"{run_id}:{TOOL_CALLED}:{step_key}:{attempt}:{channel}:{i}",
                type=TOOL_CALLED,
                run_id=run_id,
                caused_by=f"{run_id}:seed",
                timestamp=now,
                payload={
                    "step_key": step_key,
                    "attempt": attempt,
                    "tool": "artifact.evaluate",
                    "channel": channel,
                },
            )
        )
    events.append(drafts, stream_id=f"{run_id}:step:{step_key}")


def profile(**budgets: Any) -> dict[str, Any]:
    layers, _ = load_profiles()
    doc = layers.builtin["default"].model_dump(mode="json")
    doc["profile_id"] = "budget-test"
    doc["budgets"].update(budgets)
    return doc


def independent(n: int) -> dict[str, Any]:
    return plan(
        *[
            code_step(f"s{i}", write_json(f"output/s{i}.json"), [f"output/s{i}.json"])
            for i in range(n)
        ]
    )


async def status(handle) -> RunStatusView:
    return await handle.query(CompiledRunWorkflow.status)


async def wait_status(handle, wanted: str) -> RunStatusView:
    for _ in range(600):
        view = await status(handle)
        if view.status == wanted:
            return view
        await asyncio.sleep(0.05)
    raise AssertionError(f"the run never reached {wanted}; last status {view.status}")


def extension(tokens: int = 0, cost: float = 0.0, reason: str = "approved overrun") -> Any:
    return ExtendBudgetInput(tokens=tokens, cost_usd=cost, actor=OPS, reason=reason)


async def test_exhausted_budget_blocks_the_run_until_an_extension(
    temporal_env, task_queue, tmp_path
):
    width, cap = 2, 1000
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        run_id = runs.new_run_id()
        for i in range(6):
            seed_usage(eng.services.events, run_id, f"s{i}")
        handle = await eng.start(
            independent(6),
            run_id=run_id,
            profile_document=profile(max_parallel_steps=width),
            budget=BudgetLimits(max_tokens=cap),
        )
        await wait_for_event(eng.services.events, run_id, "budget.exhausted.v1")
        view = await wait_status(handle, "budget_exhausted")
        done = [s for s in view.steps if s.status == "done"]
        waiting = [s.step_key for s in view.steps if s.status == "pending"]
        budget = view.budget
        # Blocked, not failed: accepted results stay, nothing failed, nothing is in flight.
        assert budget.status == "exhausted" and waiting and budget.blocked_steps == sorted(waiting)
        assert all(s.status in ("done", "pending") for s in view.steps)
        assert budget.spent.tokens == PER_STEP * len(done) >= cap
        # Every start was checked against recorded spend: overshoot is at most one batch.
        assert budget.spent.tokens - cap <= width * PER_STEP
        assert "reached the run's cap of 1,000" in (budget.blocked_reason or "")
        # Still blocked a moment later: no step starts without more budget.
        await asyncio.sleep(1.0)
        assert [s.step_key for s in (await status(handle)).steps if s.status == "pending"] == (
            waiting
        )
        # Too little: the reply says the run is still short, with the new cap in the reason.
        short = await handle.execute_update(CompiledRunWorkflow.extend_budget, extension(tokens=1))
        assert short.status == "exhausted" and short.limits.max_tokens == cap + 1
        assert f"reached the run's cap of {cap + 1:,}" in (short.blocked_reason or "")
        state = await handle.execute_update(
            CompiledRunWorkflow.extend_budget, extension(tokens=10_000)
        )
        # The reply comes once the run has scheduled against the new caps: it is unblocked.
        assert state.status == "ok" and state.blocked_reason is None
        assert state.limits.max_tokens == cap + 10_001 and len(state.extensions) == 2
        result = await handle.result()
        log = eng.services.events.list_events(run_id=run_id)
    assert result.status == "completed" and result.budget.status == "ok"
    assert result.budget.spent.tokens == 6 * PER_STEP
    assert result.budget.spent.cost_usd == pytest.approx(0.06)
    assert result.budget.spent.model_calls == 6
    assert all(s.usage.tokens == PER_STEP for s in result.steps.values())
    [exhausted] = [e for e in log if e.type == "budget.exhausted.v1"]
    extended = [e for e in log if e.type == "budget.extended.v1"]
    assert exhausted.payload["limits"]["max_tokens"] == cap
    assert "forge budget extend" in exhausted.payload["resume_with"]
    assert [e.payload["tokens"] for e in extended] == [1, 10_000]
    assert extended[1].scope.actor.id == "ana"
    assert extended[1].payload["reason"] == "approved overrun"
    assert extended[1].payload["limits"]["max_tokens"] == cap + 10_001


async def test_budget_survives_continue_as_new(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        run_id = runs.new_run_id()
        for i in range(8):
            seed_usage(eng.services.events, run_id, f"s{i}", tokens=100, cost=0.5)
        handle = await eng.start(
            independent(8),
            run_id=run_id,
            profile_document=profile(max_parallel_steps=1),
            budget=BudgetLimits(max_cost_usd=2.0),
            history_threshold=50,
        )
        view = await wait_status(handle, "budget_exhausted")
        assert view.generation > 1, "the run should have continued as new before blocking"
        assert view.budget.spent.cost_usd == pytest.approx(2.0)
        assert "recorded cost $2.0000 reached the run's cap of $2.00" in view.budget.blocked_reason
        await handle.signal(CompiledRunWorkflow.extend_budget_signal, extension(cost=5.0))
        result = await handle.result()
    assert result.status == "completed"
    assert result.budget.spent.cost_usd == pytest.approx(4.0)


async def test_projected_precheck_refuses_a_step_that_cannot_fit(
    temporal_env, task_queue, tmp_path
):
    written = {
        "step_key": "written",
        "label": "Model-written code",
        "objective": "Compute b.",
        "expected_outputs": [{"path": "output/b.json"}],
    }
    cheap = code_step("cheap", write_json("output/a.json"), ["output/a.json"])
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(plan(cheap, written), budget=BudgetLimits(max_tokens=50_000))
        view = await wait_status(handle, "budget_exhausted")
        states = {s.step_key: s.status for s in view.steps}
        # The step that fits ran; the one projected over what remains never started.
        assert states == {"cheap": "done", "written": "pending"}
        reason = view.budget.blocked_reason or ""
        assert "step written projects 81,920 tokens" in reason
        assert "10 call(s) x 8192 max output tokens" in reason and "50,000" in reason
        state = await handle.execute_update(
            CompiledRunWorkflow.extend_budget, extension(tokens=40_000)
        )
        assert state.status == "ok"
        result = await handle.result()
    # With room it starts; this build has no model-written executor yet, which it says.
    assert result.steps["written"].attempts >= 1
    assert result.steps["written"].error.failure_class == "EXECUTOR_UNAVAILABLE"


async def test_an_extension_during_the_blocking_round_is_not_lost(
    temporal_env, task_queue, tmp_path
):
    """The extension arrives while the round that blocked is still appending budget.exhausted.

    The real store's append is held (in the activity's thread) until the signal is sent, so the
    extension lands mid-round every time; the next round must see it and start the step.
    """
    held, release = asyncio.Event(), asyncio.Event()
    loop = asyncio.get_running_loop()
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        store = eng.services.events
        append = store.append_batches  # what events__append calls

        def slow_append(batches):  # type: ignore[no-untyped-def]
            if any(d.type == "budget.exhausted.v1" for _, drafts in batches for d in drafts):
                loop.call_soon_threadsafe(held.set)
                asyncio.run_coroutine_threadsafe(release.wait(), loop).result(timeout=60)
            return append(batches)

        store.append_batches = slow_append  # type: ignore[method-assign]
        run_id = runs.new_run_id()
        for i in range(2):
            seed_usage(store, run_id, f"s{i}")
        handle = await eng.start(
            independent(2),
            run_id=run_id,
            profile_document=profile(max_parallel_steps=1),
            budget=BudgetLimits(max_tokens=PER_STEP),
        )
        await asyncio.wait_for(held.wait(), 60)
        await handle.signal(CompiledRunWorkflow.extend_budget_signal, extension(tokens=5000))
        await asyncio.wait_for(wait_status(handle, "budget_exhausted"), 60)
        release.set()
        result = await asyncio.wait_for(handle.result(), 60)
    assert result.status == "completed"
    assert {k: s.status for k, s in result.steps.items()} == {"s0": "done", "s1": "done"}
    assert result.budget.limits.max_tokens == PER_STEP + 5000 and result.budget.exhaustions == 1


async def test_refused_extensions_change_nothing(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(
            gated_plan(),
            budget=BudgetLimits(max_tokens=1000),
            profile_document=profile(max_cost_usd_per_run=None),  # a run with no cost cap
        )
        await pending_gate(handle)
        before = (await status(handle)).budget
        bad = [
            (extension(tokens=-5), "tokens must be a whole number of 0 or more"),
            # NaN has no JSON form: it arrives as null and is refused while decoding.
            (extension(cost=math.nan), "cost_usd"),
            (extension(cost=-1.0), "cost must be a finite amount"),
            (extension(), "nothing to extend"),
            (extension(tokens=10, reason=" "), "needs a reason"),
            (extension(cost=1.0), "the run has no cost cap"),
        ]
        for inp, message in bad:
            with pytest.raises(WorkflowUpdateFailedError) as info:
                await handle.execute_update(CompiledRunWorkflow.extend_budget, inp)
            assert message in str(info.value.cause), inp
        await handle.signal(CompiledRunWorkflow.extend_budget_signal, extension(tokens=-1))
        log = await wait_for_event(
            eng.services.events, handle.id, "budget.extension_refused.v1", timeout_s=30
        )
        assert (await status(handle)).budget == before
        assert not [e for e in log if e.type == "budget.extended.v1"]
        [refused] = [e for e in log if e.type == "budget.extension_refused.v1"]
        assert "0 or more" in refused.payload["refused_because"]
        gate = await pending_gate(handle)
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        await handle.result()
        # A finished run takes no updates at all: Temporal refuses before our validator.
        with pytest.raises(RPCError, match="already completed"):
            await handle.execute_update(CompiledRunWorkflow.extend_budget, extension(tokens=5))


async def test_tool_call_budgets_fail_the_step(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        run_id = runs.new_run_id()
        seed_usage(eng.services.events, run_id, "s0", bridge=4)
        seed_usage(eng.services.events, run_id, "s1", tools=1)
        result = await eng.run(
            independent(3), run_id=run_id, profile_document=profile(bridge_calls_per_step=3)
        )
    bridge, tools, fine = (result.steps[k] for k in ("s0", "s1", "s2"))
    assert bridge.error.failure_class == "BUDGET_EXHAUSTED"
    assert "4 bridge calls; its contract allows 3" in bridge.error.message
    # Frozen code has no executor tool loop: its tool budget is 0.
    assert tools.error.failure_class == "BUDGET_EXHAUSTED"
    assert "1 tool calls; its contract allows 0" in tools.error.message
    assert fine.status == "done" and result.status == "failed"
    # A failed step's recorded usage still counts against the run.
    assert bridge.usage.bridge_calls == 4 and tools.usage.tool_calls == 1
    assert result.budget.spent.tokens == 2 * PER_STEP


async def test_a_corrupt_usage_ledger_fails_the_step_once_and_the_run_cleanly(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        run_id = runs.new_run_id()
        bad = EventDraft(
            event_id=f"{run_id}:{MODEL_CALLED}:s0:bad",
            type=MODEL_CALLED,
            run_id=run_id,
            caused_by=f"{run_id}:seed",
            timestamp=datetime.now(UTC),
            payload={"step_key": "s0", "model": "m", "input_tokens": -3},
        )
        eng.services.events.append([bad], stream_id=f"{run_id}:step:s0")
        eng.planted.add(bad.event_id)
        result = await eng.run(independent(2), run_id=run_id)
        log = eng.services.events.list_events(run_id=run_id)
    s0 = result.steps["s0"]
    assert s0.error.failure_class == "LEDGER_CORRUPT" and s0.attempts == 1
    assert f"usage event {run_id}:{MODEL_CALLED}:s0:bad is malformed" in s0.error.message
    assert result.steps["s1"].status == "done" and result.status == "failed"
    assert [e.type for e in log if e.type == "run.failed.v1"] == ["run.failed.v1"]
    assert (
        len([e for e in log if e.type == "step.started.v1" and e.payload["step_key"] == "s0"]) == 1
    )
