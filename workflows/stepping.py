"""Steps: starting what is ready, settling what finished, loops, and reuse on resume."""

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from compiler import budget as budgetbook
    from compiler.recipes import directives as loopbook
    from compiler.run import dag
    from compiler.run import state as rs
    from schemas.budget import Usage
    from schemas.error_codes import ErrorCode
    from schemas.event_catalogue import STEP_ITERATION
    from schemas.recipes import TrailEntry
    from schemas.run import (
        StepError,
        StepExecuteResult,
        StepNode,
        StepState,
    )
    from schemas.run_source import ResumeSource
    from schemas.step_events import StepIteration
    from workflows import operations as ops
    from workflows import policies
    from workflows.budgeting import Budgeting
    from workflows.causes import (
        Failure,
        app_error,
        attempts,
        cause_message,
        failure_usage,
    )
    from workflows.children import ChildRuns
    from workflows.patches import PATCH_LOST_USAGE
    from workflows.routing import model_routing, unserved, unserved_message


def step_timeout(node: StepNode) -> timedelta:
    return policies.STEP_HARNESS_MARGIN + timedelta(seconds=node.timeout_s)


class Stepping(ChildRuns, Budgeting):
    """Each step runs as step__execute (or a child run), one task per step in flight."""

    def _start_ready(self) -> tuple[bool, dict[str, str]]:
        """Start what may start; returns (a gate step passed, steps the budget refused)."""
        progressed = False
        refused: dict[str, str] = {}
        state = self._state
        for node in dag.ready(state.nodes, state.states, state.gates):
            if node.kind == "gate":  # approved: a gate step has nothing else to do
                self._state = rs.gate_step_passed(self._state, node.step_key, workflow.now())
                progressed = True
                continue
            if len(self._running) >= self._state.max_parallel:
                break
            # Checked at every start against recorded spend: steps already in flight are never
            # stopped, so spend overshoots a cap by at most one batch of steps.
            refusal = self._start_refusal(node)
            if refusal is not None:
                refused[node.step_key] = refusal
                continue
            self._running[node.step_key] = self._start_step(node)
        return progressed, refused

    def _start_step(self, node: StepNode, iteration: int = 1) -> "asyncio.Task[StepExecuteResult]":
        if iteration == 1:
            self._state = rs.step_started(self._state, node.step_key, workflow.now())
        if node.uses_recipe is not None:
            return asyncio.ensure_future(self._run_sub_recipe(node, iteration))
        inp, state = self._input, self._state
        assert state.compiled_ref is not None and state.root_event_id is not None
        options = {
            "timeout": step_timeout(node),
            "retry": policies.step_retry(node.max_attempts),
            "activity_id": node.step_key if iteration == 1 else f"{node.step_key}:{iteration}",
            **model_routing(node.model_provider, inp.model_wait_s),
        }
        return asyncio.ensure_future(
            self._log.call(
                ops.STEP_EXECUTE,
                options,
                compiled_ref=state.compiled_ref,
                step_key=node.step_key,
                inputs=dag.inputs_for(node, inp.inputs.values(), state.states),
                cause_event_id=state.root_event_id,
                iteration=iteration,
                effort=state.recipes.effort if state.recipes.seeded_by else None,
                budget_left=budgetbook.left_for_step(state.budget, self._reserved()),
                params=inp.params,
                replay=node.replay,
            )
        )

    async def _reuse(self, source: ResumeSource) -> None:
        """A resumed run adopts earlier verified outputs, in topological order (no re-execution)."""
        inp = self._input
        reusable = {r.step_key: r for r in source.reusable}
        for node in self._state.nodes:
            if node.step_key not in reusable or node.gate_id is not None:
                continue
            if not dag.deps_done(node, self._state.states):
                continue
            done = await self._log.call(
                ops.STEP_REUSE,
                resumed_from=source.resumed_from,
                step=reusable[node.step_key],
                contract_hash=node.contract_hash,
                inputs=dag.inputs_for(node, inp.inputs.values(), self._state.states),
                cause_event_id=self._state.root_event_id,
            )
            if done.reused:
                self._state = rs.step_reused(
                    self._state, node.step_key, done.outputs, source.resumed_from, workflow.now()
                )

    async def _settle(self, key: str, task: "asyncio.Task[StepExecuteResult]") -> None:
        try:
            result = task.result()
        except (ActivityError, ApplicationError) as err:
            await self._settle_failure(key, err)
            return
        now = workflow.now()
        self._state, passed = rs.step_passed(self._state, result)
        node = self._state.node(key)
        if node.loop is not None and await self._loop_continues(node, passed, result):
            self._state = rs.step_done(self._state, passed, None)
            return
        self._state = rs.step_done(self._state, passed, now)

    async def _settle_failure(self, key: str, err: Failure) -> None:
        step = self._state.states[key]
        node = self._state.node(key)
        now = workflow.now()
        cause = app_error(err)
        failure = cause.type if cause is not None and cause.type else "ERROR"
        message = cause_message(err)
        if unserved(err):
            failure = ErrorCode.EXECUTOR_UNAVAILABLE
            message = unserved_message(
                f"step {key}",
                node.model_provider,
                self._input.model_wait_s,
                f"resume the run (forge resume {self._input.run_id})",
            )
        usage = failure_usage(err)
        if usage is None:
            # The last attempt died without reporting (timeout, lost worker): ask the ledger.
            usage = Usage()
            if workflow.patched(PATCH_LOST_USAGE):
                try:
                    usage = await self._log.call(ops.STEP_USAGE, step_key=key)
                except ActivityError:
                    usage = Usage()  # a corrupt ledger: the step already failed, go on
        error = StepError(failure_class=failure, message=message)
        self._state = rs.step_failed(self._state, key, error, attempts(err), usage, now)
        if node.loop is not None and step.iterations >= 1:
            # A later pass failed: the loop stops with the last good pass's results.
            nxt = step.iterations + 1
            await self._iteration_event(
                node,
                step,
                nxt,
                f"pass {nxt} failed ({failure}: {cause_message(err)}); "
                f"the step keeps pass {step.iterations}'s results",
            )

    async def _loop_continues(
        self, node: StepNode, state: StepState, result: StepExecuteResult
    ) -> bool:
        """RUN_LOOPED_STEP (seed 004 §6.2): start the next pass, or say why the loop ends."""
        loop = node.loop
        assert loop is not None
        i = result.iteration
        if loopbook.loop_should_stop(loop, i, True, result.note):
            if i >= loop.max:
                why = f"reached its bound of {loop.max} pass(es)"
            elif loop.mode == "until-dry":
                why = "the note says nothing new (dry)"
            else:
                why = f"the note holds {loop.marker}"
            await self._iteration_event(node, state, i, why)
            return False
        refusal = self._start_refusal(node)
        if refusal is not None:
            why = f"the budget refused pass {i + 1}: {refusal}"
            await self._iteration_event(node, state, i, why)
            return False
        await self._iteration_event(node, state, i, None)
        self._running[node.step_key] = self._start_step(node, iteration=i + 1)
        return True

    async def _iteration_event(
        self, node: StepNode, state: StepState, i: int, stopped: str | None
    ) -> None:
        """step.iteration.v1 for each finished pass, and a trail line: every pass is recorded."""
        assert node.loop is not None
        await self._log.emit(
            STEP_ITERATION,
            "step",
            self._root,
            StepIteration(
                step_key=node.step_key,
                iteration=i,
                mode=node.loop.mode,
                max=node.loop.max,
                note=state.note,
                stopped=stopped,
            ),
            key=node.step_key,
            id_suffix=f"{node.step_key}:{i}",
        )
        summary = (
            f"{node.step_key}: pass {i} of at most {node.loop.max} done, looping"
            if stopped is None
            else f"{node.step_key}: loop ended after {i} pass(es): {stopped}"
        )
        verb = "transition" if stopped is None else "complete"
        await self._trail_events([TrailEntry(verb=verb, summary=summary, step_key=node.step_key)])
