"""CompiledRunWorkflow: compile a plan through activities, then run its DAG of step contracts.

The class holds the handlers (status, gate decisions, budget extensions), `run()` and the DAG
loop; the rest is split by concern over one RunCore: the front end (workflows/frontend.py),
gating (gating.py), budgeting (budgeting.py), steps and loops (stepping.py), child runs
(children.py). Pure decisions live in compiler/run/ and compiler/budget.py.
"""

import asyncio
from collections.abc import Callable

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from compiler.run import gates as gatebook
    from compiler.run import state as rs
    from schemas import names
    from schemas.budget import BudgetState, ExtendBudgetInput
    from schemas.error_codes import ErrorCode
    from schemas.errors import RunFailure
    from schemas.event_catalogue import RUN_CANCELLED, RUN_FAILED, STEP_SKIPPED
    from schemas.run import (
        DecideGateInput,
        GateDecision,
        RunInput,
        RunResult,
        RunStatusView,
    )
    from schemas.run_events import RunCancelled, RunFailed
    from schemas.run_source import ResumeSource
    from schemas.step_events import StepSkipped
    from workflows import operations as ops
    from workflows.causes import cancelled
    from workflows.frontend import FrontEnd
    from workflows.gating import Gating
    from workflows.patches import CHANGES_DURING_A_ROUND, PATCH_CANCEL_INFLIGHT
    from workflows.stepping import Stepping

__all__ = ["CompiledRunWorkflow"]


@workflow.defn(name=names.WORKFLOW)
class CompiledRunWorkflow(FrontEnd, Gating, Stepping):
    """One compiled run: passes B..E as activities, then every step through the harness."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        super().__init__(inp)

    @workflow.query(name=names.STATUS)
    def status(self) -> RunStatusView:
        """The plan with per-step state, attempts, timings and receipt summaries."""
        return rs.status_view(self._state, self._log.run_id)

    @workflow.update(name=names.DECIDE_GATE)
    async def decide_gate(self, inp: DecideGateInput) -> GateDecision:
        """Record a person's decision; the validator refused anything that does not apply."""
        return await self._decide(inp)

    @decide_gate.validator
    def _validate_decision(self, inp: DecideGateInput) -> None:
        # A validator's refusal leaves no event in history: no command changes, no patch.
        late = gatebook.too_late(inp, workflow.now())
        if late is not None:
            raise RunFailure(late, code=ErrorCode.WORKER_UNAVAILABLE, retryable=False)
        problem = gatebook.refusal(self._state.gates, inp, self._state.finished)
        if problem is not None:
            raise RunFailure(problem, code=ErrorCode.DECISION_REFUSED, retryable=False)

    @workflow.signal(name=names.DECIDE_GATE)
    async def decide_gate_signal(self, inp: DecideGateInput) -> None:
        """The same decision, fire-and-forget: a refused one is recorded, never applied."""
        problem = gatebook.refusal(self._state.gates, inp, self._state.finished)
        if problem is not None:
            await self._refuse_decision(inp, problem)
            return
        await self._decide(inp)

    @workflow.update(name=names.EXTEND_BUDGET)
    async def extend_budget(self, inp: ExtendBudgetInput) -> BudgetState:
        """Raise the run's caps; a run blocked in budget_exhausted goes on when there is room.

        Returns the budget once the run has scheduled against the new caps, so the caller sees
        whether the run is unblocked (status ok) or still short (exhausted, with the reason).
        """
        await self._extend(inp)
        version = self._state.version
        await workflow.wait_condition(
            lambda: self._round_version >= version or self._scheduling_over
        )
        return self._state.budget

    @extend_budget.validator
    def _validate_extension(self, inp: ExtendBudgetInput) -> None:
        problem = self._extension_refusal(inp)
        if problem is not None:
            raise RunFailure(problem, code=ErrorCode.EXTENSION_REFUSED, retryable=False)

    @workflow.signal(name=names.EXTEND_BUDGET)
    async def extend_budget_signal(self, inp: ExtendBudgetInput) -> None:
        """The same extension, fire-and-forget: a refused one is recorded, never applied."""
        problem = self._extension_refusal(inp)
        if problem is not None:
            await self._refuse_extension(inp, problem)
            return
        await self._extend(inp)

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        if inp.carry is None:
            try:
                ended = await self._front_end()
            except BaseException as err:
                if cancelled(err):
                    await self._log.release()  # what a plan run's front end held back stands
                    if self._front_cancel:  # the activity in flight has stopped: say so
                        await self._cancelled()
                raise
            if ended is not None:
                return ended
            if isinstance(inp.source, ResumeSource) and inp.source.reusable:
                await self._reuse(inp.source)
        try:
            await self._run_dag()
        except asyncio.CancelledError:
            # Versioning: runs started before this change never cancelled their in-flight
            # steps; replaying them must not issue the cancel commands (docs/versioning.md).
            if workflow.patched(PATCH_CANCEL_INFLIGHT) and self._running:
                for task in self._running.values():
                    task.cancel()
                await workflow.wait(list(self._running.values()))
            await self._cancelled()
            raise
        return await self._finish()

    async def _run_dag(self) -> None:
        running = self._running
        self._restart_gate_clocks()  # after continue-as-new
        while True:
            # A decision or extension can arrive while this round awaits an activity (an event
            # append); the round scheduled against the version it started with, so such a change
            # must wake the next round rather than be taken as already seen.
            round_start = self._state.version
            if not running and self._should_continue_as_new():
                # Let update handlers (decisions, extensions) reply before handing over.
                self._scheduling_over = True
                await workflow.wait_condition(workflow.all_handlers_finished)
                carry = rs.carry_over(self._state)
                workflow.continue_as_new(self._input.model_copy(update={"carry": carry}))
            await self._open_gates()
            self._settle_gates()
            progressed, refused = self._start_ready()
            if progressed:
                continue
            if refused and not running:
                await self._budget_exhausted(refused)
            else:
                self._unblock()
            seen = round_start if workflow.patched(CHANGES_DURING_A_ROUND) else self._state.version
            self._round_version = seen
            awaiting = any(s.status == "awaiting_approval" for s in self._state.states.values())
            if not running and not awaiting and not refused:
                self._scheduling_over = True
                return
            change = asyncio.ensure_future(workflow.wait_condition(self._changed_since(seen)))
            await workflow.wait([*running.values(), change], return_when=asyncio.FIRST_COMPLETED)
            if not change.done():
                change.cancel()
            for key in [k for k, t in running.items() if t.done()]:
                await self._settle(key, running.pop(key))
            if self._should_continue_as_new() and running:
                # Drain what is in flight before continuing as new; start nothing more.
                await workflow.wait(list(running.values()))
                for key in list(running):
                    await self._settle(key, running.pop(key))

    def _changed_since(self, version: int) -> Callable[[], bool]:
        return lambda: self._state.version != version

    def _should_continue_as_new(self) -> bool:
        if not rs.may_continue_as_new(self._state):
            return False
        info = workflow.info()
        return (
            info.get_current_history_length() >= self._state.history_threshold
            or info.is_continue_as_new_suggested()
        )

    async def _cancelled(self) -> None:
        """Record what the cancellation stopped; published outputs are never taken back."""
        self._state, stopped = rs.cancelled(self._state)
        await self._log.emit(RUN_CANCELLED, "run", self._root, RunCancelled(stopped_steps=stopped))

    async def _finish(self) -> RunResult:
        state = self._state
        assert state.compiled_ref is not None and state.root_event_id is not None
        out = rs.outcome(state)
        for key, reason in out.skipped.items():
            await self._log.emit(
                STEP_SKIPPED,
                "step",
                state.root_event_id,
                StepSkipped(step_key=key, reason=reason),
                key=key,
            )
        if out.failed:
            self._state = rs.with_status(self._state, "failed")
            await self._log.emit(
                RUN_FAILED,
                "run",
                state.root_event_id,
                RunFailed(failed_steps=out.failed, skipped_steps=out.skipped),
            )
        else:
            final = await self._log.call(
                ops.RUN_FINALIZE,
                compiled_ref=state.compiled_ref,
                outputs=out.outputs,
                finished_at=workflow.now(),
                cause_event_id=state.root_event_id,
            )
            self._state = rs.with_status(self._state, "failed" if final.problems else "completed")
        self._state = rs.closed(self._state)
        # Let in-flight update/signal handlers (gate decisions) record their events first.
        await workflow.wait_condition(workflow.all_handlers_finished)
        state = self._state
        return RunResult(
            run_id=self._log.run_id,
            scope=self._log.scope,
            status=state.status,
            plan_hash=state.plan_hash,
            steps=dict(state.states),
            outputs=out.outputs,
            failed_steps=out.failed,
            skipped_steps=out.skipped,
            gates=dict(state.gates),
            generation=state.generation,
            budget=state.budget,
            recipes=state.recipes,
            badges=state.badges(),
        )
