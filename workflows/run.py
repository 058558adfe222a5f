"""CompiledRunWorkflow: compile a plan through activities, then run its DAG of step contracts."""

import asyncio
from collections.abc import Callable
from datetime import timedelta

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from compiler import budget as budgetbook
    from compiler.recipes import directives as loopbook
    from compiler.run import dag
    from compiler.run import gates as gatebook
    from schemas.budget import (
        BudgetExtension,
        BudgetState,
        ExtendBudgetInput,
        StepProjection,
        Usage,
    )
    from schemas.events import SYSTEM_ACTOR, Actor, EventDraft
    from schemas.recipes import (
        RECIPE_TRAIL,
        RUN_TAGGED,
        RecipePlanInput,
        RecipePlanResult,
        RecipesMatchInput,
        RecipesMatchResult,
        TrailEntry,
    )
    from schemas.run import (
        AppendEventsInput,
        AppendEventsResult,
        CompileInput,
        CompileResult,
        DecideGateInput,
        FinalizeInput,
        FinalizeResult,
        FreezeResult,
        GateDecision,
        GateState,
        PlanInput,
        PlanResult,
        RecipeView,
        ReuseInput,
        ReuseResult,
        RunCarry,
        RunInput,
        RunResult,
        RunStatus,
        RunStatusView,
        StepError,
        StepExecuteInput,
        StepExecuteResult,
        StepNode,
        StepState,
        StepUsageInput,
    )
    from workflows import policies

WORKFLOW_NAME = "CompiledRunWorkflow"
# workflow.patched ids, one per change to command order; removed only with workflow.deprecate_patch
# once no history without the marker can be replayed (README: versioning).
PATCH_CANCEL_INFLIGHT = "cancel-inflight-steps-v1"
PATCH_LOST_USAGE = "usage-of-lost-failures-v1"
CHANGES_DURING_A_ROUND = "changes-during-a-round-v1"
PATCH_RECIPES = "recipes-match-v1"
PATCH_PLANNER = "model-planner-v1"
TRAIL_KEPT = 200  # trail entries a run keeps in its state (the event log keeps all)


@workflow.defn(name=WORKFLOW_NAME)
class CompiledRunWorkflow:
    """One compiled run: passes B..E as activities, then every step through the harness."""

    @workflow.init
    def __init__(self, inp: RunInput) -> None:
        self._run_id = inp.run_id
        self._status: RunStatus = "compiling"
        self._plan_hash: str | None = None
        self._nodes: list[StepNode] = []
        self._states: dict[str, StepState] = {}
        self._generation = 1
        self._gates: dict[str, GateState] = {}
        # Bumped by every gate decision and budget extension: the DAG loop wakes on it.
        self._version = 0
        self._round_version = 0  # the _version the DAG loop last scheduled against
        self._scheduling_over = False
        self._budget = BudgetState()
        self._gate_clocks: dict[str, asyncio.Task[None]] = {}
        self._finished = False
        self._input: RunInput | None = inp
        self._running: dict[str, asyncio.Task[StepExecuteResult]] = {}
        self._settled = 0
        self._carry: RunCarry | None = None
        self._recipes = RecipeView()
        if inp.carry is not None:
            # A new generation knows its state before any handler runs in its first task.
            self._adopt(inp.carry)

    def _adopt(self, carry: RunCarry) -> None:
        self._generation = carry.generation
        self._plan_hash = carry.plan_hash
        self._nodes = carry.nodes
        self._states = dict(carry.states)
        self._gates = dict(carry.gates)
        self._budget = carry.budget
        self._carry = carry
        self._recipes = carry.recipes
        self._status = "budget_exhausted" if carry.budget.status == "exhausted" else "running"

    @workflow.query(name="status")
    def status(self) -> RunStatusView:
        """The plan with per-step state, attempts, timings and receipt summaries."""
        return RunStatusView(
            run_id=self._run_id,
            status=self._status,
            plan_hash=self._plan_hash,
            generation=self._generation,
            steps=[self._states[n.step_key] for n in self._nodes],
            order=[n.step_key for n in self._nodes],
            gates=list(self._gates.values()),
            budget=self._budget,
            recipes=self._recipes,
            badges=self._badges(),
        )

    @workflow.update(name="decide_gate")
    async def decide_gate(self, inp: DecideGateInput) -> GateDecision:
        """Record a person's decision; the validator refused anything that does not apply."""
        return await self._decide(inp)

    @decide_gate.validator
    def _validate_decision(self, inp: DecideGateInput) -> None:
        problem = gatebook.refusal(self._gates, inp, self._finished)
        if problem is not None:
            raise ValueError(problem)

    @workflow.signal(name="decide_gate")
    async def decide_gate_signal(self, inp: DecideGateInput) -> None:
        """The same decision, fire-and-forget: a refused one is recorded, never applied."""
        problem = gatebook.refusal(self._gates, inp, self._finished)
        if problem is not None:
            await self._gate_event(
                "gate.decision_refused.v1",
                inp.gate_id,
                inp.actor,
                {
                    "decision": inp.decision,
                    "reason": inp.reason,
                    "refused_because": problem,
                },
                suffix=f"{inp.actor.id}:{workflow.now().isoformat()}",
            )
            return
        await self._decide(inp)

    async def _decide(self, inp: DecideGateInput) -> GateDecision:
        gate = gatebook.decided(self._gates[inp.gate_id], inp, workflow.now())
        self._gates[inp.gate_id] = gate
        self._version += 1
        assert gate.decision is not None
        await self._gate_event(
            "gate.decided.v1",
            inp.gate_id,
            inp.actor,
            {
                "decision": inp.decision,
                "reason": inp.reason,
                "contract_hash": inp.contract_hash,
                "gated_steps": gate.spec.gated_step_keys,
            },
        )
        return gate.decision

    @workflow.update(name="extend_budget")
    async def extend_budget(self, inp: ExtendBudgetInput) -> BudgetState:
        """Raise the run's caps; a run blocked in budget_exhausted goes on when there is room.

        Returns the budget once the run has scheduled against the new caps, so the caller sees
        whether the run is unblocked (status ok) or still short (exhausted, with the reason).
        """
        await self._extend(inp)
        version = self._version
        await workflow.wait_condition(
            lambda: self._round_version >= version or self._scheduling_over
        )
        return self._budget

    @extend_budget.validator
    def _validate_extension(self, inp: ExtendBudgetInput) -> None:
        problem = self._extension_refusal(inp)
        if problem is not None:
            raise ValueError(problem)

    @workflow.signal(name="extend_budget")
    async def extend_budget_signal(self, inp: ExtendBudgetInput) -> None:
        """The same extension, fire-and-forget: a refused one is recorded, never applied."""
        problem = self._extension_refusal(inp)
        if problem is not None:
            if self._input is not None:
                await self._emit(
                    self._input,
                    "budget.extension_refused.v1",
                    "budget",
                    self._carry.root_event_id if self._carry else f"{self._run_id}:run.started.v1",
                    {
                        "tokens": inp.tokens,
                        "cost_usd": inp.cost_usd,
                        "reason": inp.reason,
                        "refused_because": problem,
                    },
                    actor=inp.actor,
                    id_suffix=f"{inp.actor.id}:{workflow.now().isoformat()}",
                )
            return
        await self._extend(inp)

    def _extension_refusal(self, inp: ExtendBudgetInput) -> str | None:
        if self._carry is None and not self._finished:
            return "the run is still compiling; its budget is known once it runs"
        return budgetbook.extension_refusal(self._budget, inp, self._finished)

    async def _extend(self, inp: ExtendBudgetInput) -> BudgetState:
        assert self._input is not None and self._carry is not None
        extension = BudgetExtension(
            tokens=inp.tokens,
            cost_usd=inp.cost_usd,
            actor=inp.actor,
            reason=inp.reason,
            extended_at=workflow.now(),
        )
        self._budget = budgetbook.extended(self._budget, extension)
        self._version += 1
        state = self._budget
        await self._emit(
            self._input,
            "budget.extended.v1",
            "budget",
            self._carry.root_event_id,
            {
                "tokens": inp.tokens,
                "cost_usd": inp.cost_usd,
                "reason": inp.reason,
                "limits": state.limits.model_dump(mode="json"),
                "spent": state.spent.model_dump(mode="json"),
            },
            actor=inp.actor,
            id_suffix=str(len(state.extensions)),
        )
        return state

    @workflow.run
    async def run(self, inp: RunInput) -> RunResult:
        if inp.carry is not None:
            carry = inp.carry
        else:
            started: dict[str, object] = {
                "plan_ref": inp.plan_ref.model_dump(mode="json") if inp.plan_ref else None,
                "inputs": sorted(inp.inputs),
                "profile": inp.profile_ref,
            }
            if inp.objective:
                started["objective"] = inp.objective
            if inp.recipe_chain:
                started["recipe_chain"] = inp.recipe_chain
            root = await self._emit(inp, "run.started.v1", "run", None, started)
            if not inp.recipe_chain and workflow.patched(PATCH_RECIPES):
                seeded = await self._match_recipes(inp, root)
                if isinstance(seeded, RunResult):
                    return seeded
                inp = seeded
            assert inp.plan_ref is not None
            carry = await self._compile(inp, root)
            carry = self._with_effort(carry)
            self._adopt(carry)
        if inp.carry is None and inp.reusable:
            await self._reuse(inp, carry)
        try:
            await self._run_dag(inp, carry)
        except asyncio.CancelledError:
            # Versioning: runs started before this change never cancelled their in-flight
            # steps; replaying them must not issue the cancel commands (README: versioning).
            if workflow.patched(PATCH_CANCEL_INFLIGHT) and self._running:
                for task in self._running.values():
                    task.cancel()
                await workflow.wait(list(self._running.values()))
            await self._cancelled(inp, carry)
            raise
        return await self._finish(inp, carry)

    async def _cancelled(self, inp: RunInput, carry: RunCarry) -> None:
        """Record what the cancellation stopped; published outputs are never taken back."""
        self._status = "cancelled"
        stopped = []
        for key, st in self._states.items():
            if st.status in ("pending", "in_progress"):
                stopped.append(key)
                self._states[key] = st.model_copy(
                    update={"status": "skipped", "skipped_because": "run cancelled"}
                )
        await self._emit(
            inp,
            "run.cancelled.v1",
            "run",
            carry.root_event_id,
            {
                "stopped_steps": stopped,
            },
        )

    async def _match_recipes(self, inp: RunInput, root: str) -> RunInput | RunResult:
        """recipes__match: the trail, then a recipe-seeded plan, no plan, or a clear refusal.

        A run started with a plan keeps it (the match is recorded for the trail); a run started
        with an objective compiles the plan of a high-confidence recipe without a planner call.
        """
        try:
            found = await workflow.execute_activity(
                "recipes__match",
                RecipesMatchInput(
                    run_id=inp.run_id,
                    tenant_id=inp.tenant_id,
                    objective=inp.objective,
                    plan_ref=inp.plan_ref,
                ),
                result_type=RecipesMatchResult,
                start_to_close_timeout=policies.COMPILE_TIMEOUT,
                retry_policy=policies.COMPILE_RETRY,
            )
        except ActivityError as err:
            if inp.plan_ref is not None:  # the plan stands; the trail says why it is thin
                await self._trail_events(
                    inp,
                    root,
                    [
                        TrailEntry(
                            verb="warn", summary=f"recipe match failed: {_cause_message(err)}"
                        )
                    ],
                )
                return inp
            await self._fail_run(inp, root, "recipes", err)
            raise ApplicationError(
                f"no plan: {_cause_message(err)}", type=policies.COMPILER_ERROR, non_retryable=True
            ) from err
        self._recipes = RecipeView(effort=found.effort, seeded_by=found.seeded_by)
        await self._trail_events(inp, root, found.trail)
        if found.outcome == "trivial":
            self._status = "completed"
            await self._emit(
                inp, "run.completed.v1", "run", root, {"steps": 0, "reason": found.message}
            )
            self._finished = True
            return RunResult(run_id=inp.run_id, status="completed", recipes=self._recipes)
        if found.outcome == "needs-planner" and workflow.patched(PATCH_PLANNER):
            return await self._plan_with_model(inp, root, found.hints)
        if found.outcome == "needs-planner":
            self._status = "failed"
            await self._emit(
                inp,
                "run.failed.v1",
                "run",
                root,
                {"stage": "plan", "error": found.message, "hints": found.hints},
            )
            raise ApplicationError(
                found.message, found.hints, type=policies.PLANNER_UNAVAILABLE, non_retryable=True
            )
        if found.outcome == "seeded" and found.candidate_ref is not None:
            await self._emit(
                inp,
                RUN_TAGGED,
                "run",
                root,
                {
                    "tags": [f"recipe:{found.seeded_by}"],
                    "plan_ref": found.candidate_ref.model_dump(mode="json"),
                },
            )
            inp = inp.model_copy(update={"plan_ref": found.candidate_ref})
            self._input = inp
        return inp

    async def _plan_with_model(self, inp: RunInput, root: str, hints: list[str]) -> RunInput:
        """compile__plan: the planner model fills the Pass A template (Pass A with a model)."""
        assert inp.objective is not None
        try:
            planned = await workflow.execute_activity(
                "compile__plan",
                PlanInput(
                    run_id=inp.run_id,
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    objective=inp.objective,
                    inputs=inp.inputs,
                    hints=hints,
                    profile_ref=inp.profile_ref,
                    profile_document=inp.profile_document,
                    cause_event_id=root,
                ),
                result_type=PlanResult,
                start_to_close_timeout=policies.PLAN_TIMEOUT,
                retry_policy=policies.PLAN_RETRY,
            )
        except ActivityError as err:
            await self._fail_run(inp, root, "plan", err)
            raise ApplicationError(
                f"no plan: {_cause_message(err)}",
                type=_cause_type(err) or policies.PLANNER_UNAVAILABLE,
                non_retryable=True,
            ) from err
        # Planning is spend of the run too: it counts against the run's caps.
        self._budget = self._budget.model_copy(
            update={"spent": self._budget.spent.plus(planned.usage)}
        )
        repairs = f", after {planned.repairs} repair(s)" if planned.repairs else ""
        await self._trail_events(
            inp,
            root,
            [
                TrailEntry(
                    verb="note",
                    summary=f"planned by the planner model: {planned.steps} step(s){repairs}",
                )
            ],
        )
        await self._emit(
            inp,
            RUN_TAGGED,
            "run",
            root,
            {"tags": ["planner"], "plan_ref": planned.candidate_ref.model_dump(mode="json")},
        )
        inp = inp.model_copy(update={"plan_ref": planned.candidate_ref})
        self._input = inp
        return inp

    def _with_effort(self, carry: RunCarry) -> RunCarry:
        """A recipe-seeded run takes its parallelism from the effort tier.

        Never above the profile's; a run started with a plan keeps the plan author's settings.
        """
        effort = self._recipes.effort
        update: dict[str, object] = {"recipes": self._recipes}
        if effort is not None and self._recipes.seeded_by is not None:
            update["max_parallel"] = max(1, min(carry.max_parallel, effort.max_parallel_steps))
        return carry.model_copy(update=update)

    async def _trail_events(self, inp: RunInput, root: str, entries: list[TrailEntry]) -> None:
        """Record decision-trail entries as recipe.trail.v1 events (one append) and in state."""
        if not entries:
            return
        start = self._recipes.recorded
        kept = [*self._recipes.trail, *entries][-TRAIL_KEPT:]
        self._recipes = self._recipes.model_copy(
            update={"trail": kept, "recorded": start + len(entries)}
        )
        drafts = [
            self._draft(
                inp,
                RECIPE_TRAIL,
                root,
                e.model_dump(mode="json", exclude_none=True),
                id_suffix=str(start + i + 1),
            )
            for i, e in enumerate(entries)
        ]
        await self._append(inp, "recipes", drafts)

    async def _compile(self, inp: RunInput, root: str) -> RunCarry:
        compile_in = {
            "profile_ref": inp.profile_ref,
            "profile_document": inp.profile_document,
            "tenant_id": inp.tenant_id,
            "project_id": inp.project_id,
            "cause_event_id": root,
        }
        try:
            ref = inp.plan_ref
            for name in ("compile__resolve", "compile__contracts", "compile__skills"):
                done = await workflow.execute_activity(
                    name,
                    CompileInput(run_id=inp.run_id, source_ref=ref, **compile_in),
                    result_type=CompileResult,
                    start_to_close_timeout=policies.COMPILE_TIMEOUT,
                    retry_policy=policies.COMPILE_RETRY,
                )
                ref = done.output_ref
                if done.usage.model_calls:  # Pass B/D asked their models
                    self._budget = self._budget.model_copy(
                        update={"spent": self._budget.spent.plus(done.usage)}
                    )
            frozen = await workflow.execute_activity(
                "compile__freeze",
                CompileInput(run_id=inp.run_id, source_ref=ref, **compile_in),
                result_type=FreezeResult,
                start_to_close_timeout=policies.COMPILE_TIMEOUT,
                retry_policy=policies.COMPILE_RETRY,
            )
        except ActivityError as err:
            await self._fail_run(inp, root, "compile", err)
            raise ApplicationError(
                f"plan rejected by the compiler: {_cause_message(err)}",
                type=policies.COMPILER_ERROR,
                non_retryable=True,
            ) from err
        compiled = await self._emit(
            inp,
            "run.compiled.v1",
            "run",
            root,
            {
                "plan_hash": frozen.plan_hash,
                "profile_id": frozen.profile_id,
                "steps": [n.step_key for n in frozen.nodes],
            },
        )
        return RunCarry(
            compiled_ref=frozen.compiled_ref,
            plan_hash=frozen.plan_hash,
            nodes=frozen.nodes,
            states={n.step_key: StepState(step_key=n.step_key) for n in frozen.nodes},
            max_parallel=frozen.max_parallel,
            history_threshold=inp.history_threshold or frozen.history_threshold,
            root_event_id=compiled,
            generation=1,
            gates={
                g.gate_id: GateState(spec=g, approver_role=g.approver_role) for g in frozen.gates
            },
            # Spend before the first step (the planner, Pass B/D's models) is already the run's.
            budget=BudgetState(limits=inp.budget or frozen.budget, spent=self._budget.spent),
        )

    async def _run_dag(self, inp: RunInput, carry: RunCarry) -> None:
        running = self._running
        for gate_id, gate in self._gates.items():  # after continue-as-new: restart the clocks
            if gate.status == "pending":
                self._start_gate_clock(inp, carry, gate_id)
        while True:
            # A decision or extension can arrive while this round awaits an activity (an event
            # append); the round scheduled against the version it started with, so such a change
            # must wake the next round rather than be taken as already seen.
            round_start = self._version
            if not running and self._should_continue_as_new(carry):
                # Let update handlers (decisions, extensions) reply before handing over.
                self._scheduling_over = True
                await workflow.wait_condition(workflow.all_handlers_finished)
                workflow.continue_as_new(inp.model_copy(update={"carry": self._carry_over(carry)}))
            await self._open_gates(inp, carry)
            self._settle_gates()
            progressed, refused = self._start_ready(inp, carry)
            if progressed:
                continue
            if refused and not running:
                await self._budget_exhausted(inp, carry, refused)
            elif self._budget.status == "exhausted":  # something could start again
                self._budget = self._budget.model_copy(
                    update={"status": "ok", "blocked_reason": None, "blocked_steps": []}
                )
                self._status = "running"
            seen = round_start if workflow.patched(CHANGES_DURING_A_ROUND) else self._version
            self._round_version = seen
            awaiting = any(s.status == "awaiting_approval" for s in self._states.values())
            if not running and not awaiting and not refused:
                self._scheduling_over = True
                return
            change = asyncio.ensure_future(workflow.wait_condition(self._changed_since(seen)))
            await workflow.wait([*running.values(), change], return_when=asyncio.FIRST_COMPLETED)
            if not change.done():
                change.cancel()
            for key in [k for k, t in running.items() if t.done()]:
                await self._settle(inp, key, running.pop(key))
            if self._should_continue_as_new(carry) and running:
                # Drain what is in flight before continuing as new; start nothing more.
                await workflow.wait(list(running.values()))
                for key in list(running):
                    await self._settle(inp, key, running.pop(key))

    def _start_ready(self, inp: RunInput, carry: RunCarry) -> tuple[bool, dict[str, str]]:
        """Start what may start; returns (a gate step passed, steps the budget refused)."""
        progressed = False
        refused: dict[str, str] = {}
        for node in dag.ready(self._nodes, self._states, self._gates):
            if node.kind == "gate":  # approved: a gate step has nothing else to do
                self._states[node.step_key] = self._states[node.step_key].model_copy(
                    update={"status": "done", "finished_at": workflow.now()}
                )
                progressed = True
                continue
            if len(self._running) >= carry.max_parallel:
                break
            # Checked at every start against recorded spend: steps already in flight are never
            # stopped, so spend overshoots a cap by at most one batch of steps.
            refusal = budgetbook.start_refusal(
                self._budget, node.step_key, node.projected, reserved=self._reserved()
            )
            if refusal is not None:
                refused[node.step_key] = refusal
                continue
            self._running[node.step_key] = self._start_step(inp, carry, node)
        return progressed, refused

    def _reserved(self) -> list[StepProjection]:
        """Projections of the steps in flight: what they may still spend is not free."""
        return [n.projected for n in self._nodes if n.step_key in self._running]

    async def _budget_exhausted(
        self, inp: RunInput, carry: RunCarry, refused: dict[str, str]
    ) -> None:
        """Block (not fail) the run until an extension makes room; accepted results stay."""
        reason = next(iter(refused.values()))
        if self._budget.status == "exhausted" and self._budget.blocked_steps == sorted(refused):
            # Still short after an extension: same block, up-to-date reason, no new event.
            self._budget = self._budget.model_copy(update={"blocked_reason": reason})
            self._status = "budget_exhausted"
            return
        self._budget = self._budget.model_copy(
            update={
                "status": "exhausted",
                "blocked_reason": reason,
                "blocked_steps": sorted(refused),
                "exhaustions": self._budget.exhaustions + 1,
            }
        )
        self._status = "budget_exhausted"
        await self._emit(
            inp,
            "budget.exhausted.v1",
            "budget",
            carry.root_event_id,
            {
                "reason": reason,
                "refusals": refused,
                "limits": self._budget.limits.model_dump(mode="json"),
                "spent": self._budget.spent.model_dump(mode="json"),
                "resume_with": f"forge budget extend {inp.run_id} --tokens N [--cost USD]",
            },
            id_suffix=str(self._budget.exhaustions),
        )

    def _changed_since(self, version: int) -> Callable[[], bool]:
        return lambda: self._version != version

    async def _open_gates(self, inp: RunInput, carry: RunCarry) -> None:
        """Request the gate of every step that is otherwise ready (once per gate)."""
        for node in self._nodes:
            state = self._states[node.step_key]
            if (
                node.gate_id is None
                or state.status != "pending"
                or not dag.deps_done(node, self._states)
            ):
                continue
            gate = self._gates[node.gate_id]
            if gate.status == "dormant":
                self._gates[node.gate_id] = gate.model_copy(
                    update={"status": "pending", "requested_at": workflow.now()}
                )
                # Before the event's await, so no query sees a pending gate with a pending step.
                self._states[node.step_key] = state.model_copy(
                    update={"status": "awaiting_approval"}
                )
                await self._gate_event(
                    "gate.requested.v1",
                    node.gate_id,
                    SYSTEM_ACTOR,
                    {
                        "gate": gate.spec.model_dump(mode="json"),
                    },
                )
                self._start_gate_clock(inp, carry, node.gate_id)
            if self._gates[node.gate_id].status == "pending":
                self._states[node.step_key] = self._states[node.step_key].model_copy(
                    update={"status": "awaiting_approval"}
                )

    def _settle_gates(self) -> None:
        """A rejected gate fails its waiting steps (and so skips their dependents)."""
        self._states.update(gatebook.settle(self._nodes, self._states, self._gates, workflow.now()))

    def _start_gate_clock(self, inp: RunInput, carry: RunCarry, gate_id: str) -> None:
        if gate_id not in self._gate_clocks or self._gate_clocks[gate_id].done():
            self._gate_clocks[gate_id] = asyncio.ensure_future(self._gate_clock(inp, gate_id))

    async def _gate_clock(self, inp: RunInput, gate_id: str) -> None:
        """Durable timers for a pending gate: reminders and its deadline. No polling."""
        while True:
            timer = gatebook.next_timer(self._gates[gate_id], workflow.now())
            if timer is None:
                return
            kind, delay = timer
            try:
                await workflow.wait_condition(
                    lambda: self._gates[gate_id].status != "pending", timeout=delay.total_seconds()
                )
                return
            except TimeoutError:
                await self._on_gate_timer(gate_id, kind)

    async def _on_gate_timer(self, gate_id: str, kind: str) -> None:
        gate = self._gates[gate_id]
        if kind == "reminder":
            self._gates[gate_id] = gate.model_copy(update={"reminders": gate.reminders + 1})
            await self._gate_event(
                "gate.reminder.v1",
                gate_id,
                SYSTEM_ACTOR,
                {
                    "reminder": gate.reminders + 1,
                    "approver_role": gate.approver_role,
                    "waiting_s": (workflow.now() - gate.requested_at).total_seconds()
                    if gate.requested_at
                    else 0,
                },
                suffix=str(gate.reminders + 1),
            )
            return
        if gate.spec.on_timeout == "escalate" and gate.spec.escalate_to_role:
            self._gates[gate_id] = gate.model_copy(
                update={"escalated": True, "approver_role": gate.spec.escalate_to_role}
            )
            await self._gate_event(
                "gate.escalated.v1",
                gate_id,
                SYSTEM_ACTOR,
                {
                    "from_role": gate.approver_role,
                    "to_role": gate.spec.escalate_to_role,
                },
            )
            return
        timeout = DecideGateInput(
            gate_id=gate_id,
            decision="reject",
            actor=SYSTEM_ACTOR,
            reason=f"no decision within the {gate.spec.deadline_s}s deadline",
            contract_hash=gate.spec.contract_hash,
        )
        await self._decide(timeout)

    async def _gate_event(
        self,
        type_: str,
        gate_id: str,
        actor: Actor,
        payload: dict[str, object],
        suffix: str = "",
    ) -> None:
        assert self._input is not None and self._carry is not None
        await self._emit(
            self._input,
            type_,
            f"gate:{gate_id}",
            self._carry.root_event_id,
            {"gate_id": gate_id, **payload},
            actor=actor,
            id_suffix=f"{gate_id}" + (f":{suffix}" if suffix else ""),
        )

    def _start_step(
        self, inp: RunInput, carry: RunCarry, node: StepNode, iteration: int = 1
    ) -> "asyncio.Task[StepExecuteResult]":
        if iteration == 1:
            self._states[node.step_key] = self._states[node.step_key].model_copy(
                update={"status": "in_progress", "started_at": workflow.now()}
            )
        if node.uses_recipe is not None:
            return asyncio.ensure_future(self._run_sub_recipe(inp, node, iteration))
        step_in = StepExecuteInput(
            run_id=inp.run_id,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            compiled_ref=carry.compiled_ref,
            step_key=node.step_key,
            inputs=dag.inputs_for(node, inp.inputs.values(), self._states),
            cause_event_id=carry.root_event_id,
            iteration=iteration,
            effort=self._recipes.effort if self._recipes.seeded_by else None,
            budget_left=budgetbook.left_for_step(self._budget, self._reserved()),
        )
        return asyncio.ensure_future(
            workflow.execute_activity(
                "step__execute",
                step_in,
                result_type=StepExecuteResult,
                start_to_close_timeout=_step_timeout(node),
                heartbeat_timeout=policies.STEP_HEARTBEAT_TIMEOUT,
                retry_policy=policies.step_retry(node.max_attempts),
                activity_id=node.step_key if iteration == 1 else f"{node.step_key}:{iteration}",
            )
        )

    async def _run_sub_recipe(
        self, inp: RunInput, node: StepNode, iteration: int
    ) -> StepExecuteResult:
        """`uses:` (seed 004 §4.2): the sub-recipe runs as a child run with its own plan.

        The call stack of recipes travels with the child; recipes__plan refuses a recipe already
        on it, or a call deeper than the cap. The child's outputs and spend fold back as this
        step's outcome; a child that does not complete fails the step, saying which steps failed.
        """
        assert node.uses_recipe is not None and self._carry is not None
        chain = list(inp.recipe_chain)
        own = (node.source_recipe or "").split("/")[-1]
        if own and (not chain or chain[-1] != own):
            chain.append(own)
        root = self._carry.root_event_id
        try:
            planned = await workflow.execute_activity(
                "recipes__plan",
                RecipePlanInput(
                    run_id=inp.run_id,
                    slug=node.uses_recipe,
                    chain=chain,
                    mission=f"{node.uses_recipe} for step {node.step_key} of {inp.run_id}",
                ),
                result_type=RecipePlanResult,
                start_to_close_timeout=policies.COMPILE_TIMEOUT,
                retry_policy=policies.COMPILE_RETRY,
            )
        except ActivityError as err:
            cause = _app_error(err)
            raise ApplicationError(
                _cause_message(err),
                {"attempt": iteration},
                type=cause.type if cause is not None and cause.type else "SUB_RECIPE_FAILED",
                non_retryable=True,
            ) from err
        child_id = f"{inp.run_id}-{node.step_key}"[:120] + (
            f"-{iteration}" if iteration > 1 else ""
        )
        await self._trail_events(
            inp,
            root,
            [
                *planned.trail,
                TrailEntry(
                    verb="dispatch",
                    summary=f"{node.step_key}: uses {node.uses_recipe} as child run {child_id}",
                    detail={"child_run": child_id, "chain": [*chain, node.uses_recipe]},
                    step_key=node.step_key,
                ),
            ],
        )
        child_in = RunInput(
            run_id=child_id,
            plan_ref=planned.candidate_ref,
            inputs=inp.inputs,
            profile_ref=inp.profile_ref,
            profile_document=inp.profile_document,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            budget=budgetbook.remaining(self._budget),
            recipe_chain=[*chain, node.uses_recipe],
        )
        try:
            child: RunResult = await workflow.execute_child_workflow(
                WORKFLOW_NAME, child_in, id=child_id, result_type=RunResult
            )
        except ChildWorkflowError as err:
            raise ApplicationError(
                f"sub-recipe {node.uses_recipe} (child run {child_id}) failed: {err.cause or err}",
                {"attempt": iteration},
                type="SUB_RECIPE_FAILED",
                non_retryable=True,
            ) from err
        done = child.status == "completed"
        await self._trail_events(
            inp,
            root,
            [
                TrailEntry(
                    verb="complete" if done else "warn",
                    summary=f"{node.step_key}: child run {child_id} {child.status}",
                    detail={"child_run": child_id, "failed_steps": child.failed_steps},
                    step_key=node.step_key,
                )
            ],
        )
        if not done:
            failures = {
                k: f"{s.error.failure_class}: {s.error.message}"
                for k, s in child.steps.items()
                if s.error is not None
            }
            raise ApplicationError(
                f"sub-recipe {node.uses_recipe} (child run {child_id}) {child.status}; "
                + ("; ".join(f"{k}: {v}" for k, v in failures.items()) or (child.error or "")),
                {"attempt": iteration, "usage": child.budget.spent.model_dump(mode="json")},
                type="SUB_RECIPE_FAILED",
                non_retryable=True,
            )
        last = [child.steps[k] for k in child.steps if child.steps[k].note]
        return StepExecuteResult(
            step_key=node.step_key,
            attempt=1,
            outputs=child.outputs,
            receipt_summary={"child_run": child_id, "steps": len(child.steps)},
            completed_event_id=f"{child_id}:run.completed.v1",
            usage=child.budget.spent,
            iteration=iteration,
            note=last[-1].note if last else f"{node.uses_recipe} completed in {child_id}",
        )

    async def _reuse(self, inp: RunInput, carry: RunCarry) -> None:
        """A resumed run adopts earlier verified outputs, in topological order (no re-execution)."""
        reusable = {r.step_key: r for r in inp.reusable}
        for node in self._nodes:
            if node.step_key not in reusable or node.gate_id is not None:
                continue
            if not dag.deps_done(node, self._states):
                continue
            done = await workflow.execute_activity(
                "step__reuse",
                ReuseInput(
                    run_id=inp.run_id,
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    resumed_from=inp.resumed_from or "",
                    step=reusable[node.step_key],
                    contract_hash=node.contract_hash,
                    inputs=dag.inputs_for(node, inp.inputs.values(), self._states),
                    cause_event_id=carry.root_event_id,
                ),
                result_type=ReuseResult,
                start_to_close_timeout=policies.FINALIZE_TIMEOUT,
                retry_policy=policies.EVENTS_RETRY,
            )
            if done.reused:
                now = workflow.now()
                self._states[node.step_key] = self._states[node.step_key].model_copy(
                    update={
                        "status": "done",
                        "started_at": now,
                        "finished_at": now,
                        "outputs": done.outputs,
                        "receipt": {"reused_from": inp.resumed_from},
                    }
                )

    async def _settle(
        self, inp: RunInput, key: str, task: "asyncio.Task[StepExecuteResult]"
    ) -> None:
        self._settled += 1
        state = self._states[key]
        now = workflow.now()
        try:
            result = task.result()
        except (ActivityError, ApplicationError) as err:
            cause = _app_error(err)
            failure = cause.type if cause is not None and cause.type else "ERROR"
            attempts = _attempts(err)
            usage = _failure_usage(err)
            if usage is None:
                # The last attempt died without reporting (timeout, lost worker): ask the ledger.
                usage = Usage()
                if workflow.patched(PATCH_LOST_USAGE):
                    try:
                        usage = await workflow.execute_activity(
                            "step__usage",
                            StepUsageInput(run_id=inp.run_id, step_key=key),
                            result_type=Usage,
                            start_to_close_timeout=policies.EVENTS_TIMEOUT,
                            retry_policy=policies.EVENTS_RETRY,
                        )
                    except ActivityError:
                        usage = Usage()  # a corrupt ledger: the step already failed, go on
            self._spend(usage.since(state.usage))
            node = self._node(key)
            if node.loop is not None and state.iterations >= 1:
                # A later pass failed: the loop stops with the last good pass's results.
                await self._iteration_event(
                    inp,
                    node,
                    state,
                    state.iterations + 1,
                    f"pass {state.iterations + 1} failed ({failure}: {_cause_message(err)}); "
                    f"the step keeps pass {state.iterations}'s results",
                )
                self._states[key] = state.model_copy(
                    update={"status": "done", "finished_at": now, "usage": usage}
                )
                return
            self._states[key] = state.model_copy(
                update={
                    "status": "error",
                    "finished_at": now,
                    "attempts": attempts,
                    "error": StepError(failure_class=failure, message=_cause_message(err)),
                    "usage": usage,
                }
            )
            self._states.update(dag.skip_dependents(self._nodes, self._states, key))
            return
        self._spend(result.usage.since(state.usage))
        node = self._node(key)
        passed = state.model_copy(
            update={
                "attempts": result.attempt,
                "outputs": result.outputs,
                "receipt": result.receipt_summary,
                "usage": result.usage,
                "note": result.note,
                "iterations": result.iteration if node.loop is not None else 0,
            }
        )
        if node.loop is not None and await self._loop_continues(inp, node, passed, result):
            self._states[key] = passed
            return
        self._states[key] = passed.model_copy(update={"status": "done", "finished_at": now})

    def _node(self, key: str) -> StepNode:
        return next(n for n in self._nodes if n.step_key == key)

    async def _loop_continues(
        self, inp: RunInput, node: StepNode, state: StepState, result: StepExecuteResult
    ) -> bool:
        """RUN_LOOPED_STEP (seed 004 §6.2): start the next pass, or say why the loop ends."""
        loop = node.loop
        assert loop is not None and self._carry is not None
        i = result.iteration
        if loopbook.loop_should_stop(loop, i, True, result.note):
            if i >= loop.max:
                why = f"reached its bound of {loop.max} pass(es)"
            elif loop.mode == "until-dry":
                why = "the note says nothing new (dry)"
            else:
                why = f"the note holds {loop.marker}"
            await self._iteration_event(inp, node, state, i, why)
            return False
        refusal = budgetbook.start_refusal(
            self._budget, node.step_key, node.projected, reserved=self._reserved()
        )
        if refusal is not None:
            await self._iteration_event(
                inp, node, state, i, f"the budget refused pass {i + 1}: {refusal}"
            )
            return False
        await self._iteration_event(inp, node, state, i, None)
        self._running[node.step_key] = self._start_step(inp, self._carry, node, iteration=i + 1)
        return True

    async def _iteration_event(
        self, inp: RunInput, node: StepNode, state: StepState, i: int, stopped: str | None
    ) -> None:
        """step.iteration.v1 for each finished pass, and a trail line: every pass is recorded."""
        assert node.loop is not None and self._carry is not None
        root = self._carry.root_event_id
        await self._emit(
            inp,
            "step.iteration.v1",
            f"step:{node.step_key}",
            root,
            {
                "step_key": node.step_key,
                "iteration": i,
                "mode": node.loop.mode,
                "max": node.loop.max,
                "note": state.note,
                "stopped": stopped,
            },
            id_suffix=f"{node.step_key}:{i}",
        )
        summary = (
            f"{node.step_key}: pass {i} of at most {node.loop.max} done, looping"
            if stopped is None
            else f"{node.step_key}: loop ended after {i} pass(es): {stopped}"
        )
        verb = "transition" if stopped is None else "complete"
        await self._trail_events(
            inp, root, [TrailEntry(verb=verb, summary=summary, step_key=node.step_key)]
        )

    def _spend(self, usage: Usage) -> None:
        self._budget = self._budget.model_copy(update={"spent": self._budget.spent.plus(usage)})

    def _should_continue_as_new(self, carry: RunCarry) -> bool:
        if self._settled == 0:  # every generation moves the run forward at least one step
            return False
        info = workflow.info()
        pending = any(s.status in ("pending", "in_progress") for s in self._states.values())
        return pending and (
            info.get_current_history_length() >= carry.history_threshold
            or info.is_continue_as_new_suggested()
        )

    def _carry_over(self, carry: RunCarry) -> RunCarry:
        return carry.model_copy(
            update={
                "states": dict(self._states),
                "gates": dict(self._gates),
                "budget": self._budget,
                "recipes": self._recipes,
                "generation": self._generation + 1,
            }
        )

    async def _finish(self, inp: RunInput, carry: RunCarry) -> RunResult:
        failed = [k for k, s in self._states.items() if s.status == "error"]
        skipped = {
            k: s.skipped_because or "" for k, s in self._states.items() if s.status == "skipped"
        }
        outputs = [ref for n in self._nodes for ref in self._states[n.step_key].outputs]
        for key, reason in skipped.items():
            await self._emit(
                inp,
                "step.skipped.v1",
                f"step:{key}",
                carry.root_event_id,
                {
                    "step_key": key,
                    "reason": reason,
                },
            )
        if failed:
            self._status = "failed"
            await self._emit(
                inp,
                "run.failed.v1",
                "run",
                carry.root_event_id,
                {
                    "failed_steps": failed,
                    "skipped_steps": skipped,
                },
            )
        else:
            final = await workflow.execute_activity(
                "run__finalize",
                FinalizeInput(
                    run_id=inp.run_id,
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    compiled_ref=carry.compiled_ref,
                    outputs=outputs,
                    finished_at=workflow.now(),
                    cause_event_id=carry.root_event_id,
                ),
                result_type=FinalizeResult,
                start_to_close_timeout=policies.FINALIZE_TIMEOUT,
                retry_policy=policies.EVENTS_RETRY,
            )
            self._status = "failed" if final.problems else "completed"
        self._finished = True
        # Let in-flight update/signal handlers (gate decisions) record their events first.
        await workflow.wait_condition(workflow.all_handlers_finished)
        return RunResult(
            run_id=inp.run_id,
            status=self._status,
            plan_hash=carry.plan_hash,
            steps=dict(self._states),
            outputs=outputs,
            failed_steps=failed,
            skipped_steps=skipped,
            gates=dict(self._gates),
            generation=self._generation,
            budget=self._budget,
            recipes=self._recipes,
            badges=self._badges(),
        )

    def _badges(self) -> dict[str, str]:
        return {n.step_key: n.source_recipe for n in self._nodes if n.source_recipe}

    async def _fail_run(self, inp: RunInput, root: str, stage: str, err: ActivityError) -> None:
        self._status = "failed"
        details: list[object] = []
        cause = err.cause
        if isinstance(cause, ApplicationError):
            details = list(cause.details)
        await self._emit(
            inp,
            "run.failed.v1",
            "run",
            root,
            {
                "stage": stage,
                "error": _cause_message(err),
                "details": details,
            },
        )

    async def _emit(
        self,
        inp: RunInput,
        type_: str,
        stream: str,
        caused_by: str | None,
        payload: dict[str, object],
        *,
        actor: Actor = SYSTEM_ACTOR,
        id_suffix: str | None = None,
    ) -> str:
        """Append one run-level event with a deterministic id; returns that id."""
        draft = self._draft(inp, type_, caused_by, payload, actor=actor, id_suffix=id_suffix)
        await self._append(inp, stream, [draft])
        return draft.event_id

    def _draft(
        self,
        inp: RunInput,
        type_: str,
        caused_by: str | None,
        payload: dict[str, object],
        *,
        actor: Actor = SYSTEM_ACTOR,
        id_suffix: str | None = None,
    ) -> EventDraft:
        suffix = id_suffix if id_suffix is not None else str(payload.get("step_key", ""))
        return EventDraft(
            event_id=f"{inp.run_id}:{type_}" + (f":{suffix}" if suffix else ""),
            type=type_,
            actor=actor,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            run_id=inp.run_id,
            caused_by=caused_by,
            timestamp=workflow.now(),
            payload=payload,
        )

    async def _append(self, inp: RunInput, stream: str, drafts: list[EventDraft]) -> None:
        await workflow.execute_activity(
            "events__append",
            AppendEventsInput(stream_id=f"{inp.run_id}:{stream}", events=drafts),
            result_type=AppendEventsResult,
            start_to_close_timeout=policies.EVENTS_TIMEOUT,
            retry_policy=policies.EVENTS_RETRY,
        )


def _step_timeout(node: StepNode) -> timedelta:
    return policies.STEP_HARNESS_MARGIN + timedelta(seconds=node.timeout_s)


def _app_error(err: ActivityError | ApplicationError) -> ApplicationError | None:
    """The application error behind a failed activity, or a child step's own error."""
    if isinstance(err, ApplicationError):
        return err
    return err.cause if isinstance(err.cause, ApplicationError) else None


def _cause_type(err: ActivityError | ApplicationError) -> str | None:
    cause = _app_error(err)
    return cause.type if cause is not None else None


def _cause_message(err: ActivityError | ApplicationError) -> str:
    cause = _app_error(err)
    return str(cause.message if cause is not None else err.cause or err)


def _failure_usage(err: ActivityError | ApplicationError) -> Usage | None:
    """The step's recorded usage, which step__execute puts in its error details."""
    cause = _app_error(err)
    if cause is not None and cause.details:
        first = cause.details[0]
        raw = first.get("usage") if isinstance(first, dict) else None
        if isinstance(raw, dict):
            return Usage.model_validate(raw)
    return None


def _attempts(err: ActivityError | ApplicationError) -> int:
    """The failing attempt's number, which step__execute puts first in its error details."""
    cause = _app_error(err)
    if cause is not None and cause.details:
        first = cause.details[0]
        attempt = first.get("attempt") if isinstance(first, dict) else None
        if isinstance(attempt, int):
            return attempt
    return 1
