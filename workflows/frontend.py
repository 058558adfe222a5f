"""The front end of a run: run.started, the recipe match, the planner, the compile passes."""

from collections.abc import Awaitable
from typing import Protocol, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from schemas.artifacts import ArtifactRef
    from schemas.budget import BudgetState
    from schemas.error_codes import ErrorCode, parse_code
    from schemas.errors import RunFailure
    from schemas.event_catalogue import RUN_COMPILED, RUN_COMPLETED, RUN_FAILED, RUN_STARTED
    from schemas.recipes import RUN_TAGGED, TrailEntry
    from schemas.run import (
        CompileInput,
        FreezeResult,
        GateState,
        RecipeView,
        RunCarry,
        RunResult,
        StepState,
    )
    from schemas.run_events import RunCompiled, RunCompleted, RunFailed, RunStarted, RunTagged
    from workflows import operations as ops
    from workflows.causes import (
        cause_message,
        cause_type,
        own_details,
    )
    from workflows.core import RunCore
    from workflows.patches import (
        PATCH_FRONT_END,
        PATCH_PLANNER,
        PATCH_RECIPES,
    )
    from workflows.routing import model_routing, unserved, unserved_message

Out = TypeVar("Out", bound=BaseModel)


class CompileCall(Protocol):
    """A compile activity run on a plan document (by reference) in the run's profile."""

    def __call__(self, op: "ops.Operation[CompileInput, Out]", ref: ArtifactRef) -> Awaitable[Out]:
        """The activity `op` on the document at `ref`."""
        ...


class FrontEnd(RunCore):
    """From the run's input to a compiled run (its RunCarry), or a run that ends before it."""

    async def _front_end(self) -> RunResult | None:
        """Start, match, plan and compile; a RunResult when the run ends here (trivial)."""
        inp = self._input
        # objective and recipe_chain are stored only when there are any (as ever).
        started = RunStarted(
            plan_ref=inp.plan_ref,
            inputs=sorted(inp.inputs),
            profile=inp.profile_ref,
            **({"objective": inp.objective} if inp.objective else {}),
            **({"recipe_chain": inp.recipe_chain} if inp.recipe_chain else {}),
            **({"capsule": inp.capsule} if inp.capsule else {}),
            **({"params": inp.params} if inp.params else {}),
        )
        # A capsule run has its plan: no recipe match, no planner, no compile passes.
        planned = inp.plan_ref is not None or inp.capsule is not None
        if planned and workflow.patched(PATCH_FRONT_END):
            # A plan run's front end takes a moment: run.started and the recipe trail go out
            # with run.compiled (or run.failed), in one append.
            self._log.hold("run", [self._log.draft(RUN_STARTED, None, started)])
        else:
            await self._log.emit(RUN_STARTED, "run", None, started)
        if not inp.recipe_chain and inp.capsule is None and workflow.patched(PATCH_RECIPES):
            ended = await self._match_recipes()
            if ended is not None:
                return ended
        self._adopt(self._with_effort(await self._compile()))
        return None

    async def _match_recipes(self) -> RunResult | None:
        """recipes__match: the trail, then a recipe-seeded plan, no plan, or a clear refusal.

        A run started with a plan keeps it (the match is recorded for the trail); a run started
        with an objective compiles the plan of a high-confidence recipe without a planner call.
        """
        inp = self._input
        try:
            found = await self._log.call(
                ops.RECIPES_MATCH, objective=inp.objective, plan_ref=inp.plan_ref
            )
        except ActivityError as err:
            if inp.plan_ref is not None:  # the plan stands; the trail says why it is thin
                summary = f"recipe match failed: {cause_message(err)}"
                await self._trail_events([TrailEntry(verb="warn", summary=summary)])
                return None
            await self._fail_run("recipes", err)
            raise RunFailure(
                f"no plan: {cause_message(err)}", code=ErrorCode.COMPILER_ERROR, retryable=False
            ) from err
        self._recipes = RecipeView(effort=found.effort, seeded_by=found.seeded_by)
        await self._trail_events(found.trail)
        if found.outcome == "trivial":
            self._status = "completed"
            await self._log.emit(
                RUN_COMPLETED, "run", self._root, RunCompleted(steps=0, reason=found.message)
            )
            self._finished = True
            return RunResult(
                run_id=inp.run_id, scope=inp.scope, status="completed", recipes=self._recipes
            )
        if found.outcome == "needs-planner" and workflow.patched(PATCH_PLANNER):
            await self._plan_with_model(found.hints)
            return None
        if found.outcome == "needs-planner":
            self._status = "failed"
            await self._log.emit(
                RUN_FAILED,
                "run",
                self._root,
                RunFailed(stage="plan", error=found.message, hints=found.hints),
            )
            raise RunFailure(
                found.message,
                code=ErrorCode.PLANNER_UNAVAILABLE,
                retryable=False,
                details=[found.hints],
            )
        if found.outcome == "seeded" and found.candidate_ref is not None:
            await self._log.emit(
                RUN_TAGGED,
                "run",
                self._root,
                RunTagged(tags=[f"recipe:{found.seeded_by}"], plan_ref=found.candidate_ref),
            )
            self._input = inp.model_copy(update={"plan_ref": found.candidate_ref})
        return None

    async def _plan_with_model(self, hints: list[str]) -> None:
        """compile__plan: the planner model fills the Pass A template (Pass A with a model)."""
        inp = self._input
        assert inp.objective is not None
        try:
            planned = await self._log.call(
                ops.COMPILE_PLAN,
                model_routing(inp.planner_provider, inp.model_wait_s),
                objective=inp.objective,
                inputs=inp.inputs,
                hints=hints,
                params=inp.params,
                profile_ref=inp.profile_ref,
                profile_document=inp.profile_document,
                cause_event_id=self._root,
            )
        except ActivityError as err:
            await self._fail_run("plan", err)
            why = cause_message(err)
            if unserved(err):
                why = unserved_message(
                    "the planner call",
                    inp.planner_provider,
                    inp.model_wait_s,
                    "run the objective again; or start the run with a plan (forge run PLAN.json), "
                    "or reword the objective so one recipe matches clearly (forge recipes match "
                    "TEXT)",
                )
                if hints:
                    why += f" (recipes that matched weakly: {', '.join(hints)})"
            told = cause_type(err)
            raise RunFailure(
                f"no plan: {why}",
                code=parse_code(told) if told else ErrorCode.PLANNER_UNAVAILABLE,
                retryable=False,
            ) from err
        self._spend(planned.usage)  # planning is spend of the run too: it counts against caps
        repairs = f", after {planned.repairs} repair(s)" if planned.repairs else ""
        summary = f"planned by the planner model: {planned.steps} step(s){repairs}"
        await self._trail_events([TrailEntry(verb="note", summary=summary)])
        await self._log.emit(
            RUN_TAGGED,
            "run",
            self._root,
            RunTagged(tags=["planner"], plan_ref=planned.candidate_ref),
        )
        self._input = inp.model_copy(update={"plan_ref": planned.candidate_ref})

    def _with_effort(self, carry: RunCarry) -> RunCarry:
        """A recipe-seeded run takes its parallelism from the effort tier.

        Never above the profile's; a run started with a plan keeps the plan author's settings.
        """
        effort = self._recipes.effort
        update: dict[str, object] = {"recipes": self._recipes}
        if effort is not None and self._recipes.seeded_by is not None:
            update["max_parallel"] = max(1, min(carry.max_parallel, effort.max_parallel_steps))
        return carry.model_copy(update=update)

    async def _compile(self) -> RunCarry:
        """Passes B..E in compiler/plan/pipeline.py's order (compile__passes); E freezes."""
        inp = self._input
        root = self._root
        if inp.capsule is not None:
            return await self._carry_of(await self._instantiate(), root)
        assert inp.plan_ref is not None

        def compile_(op: "ops.Operation[CompileInput, Out]", ref: ArtifactRef) -> Awaitable[Out]:
            return self._log.call(
                op,
                source_ref=ref,
                profile_ref=inp.profile_ref,
                profile_document=inp.profile_document,
                cause_event_id=root,
            )

        try:
            if workflow.patched(PATCH_FRONT_END):
                frozen = await compile_(ops.COMPILE_PASSES, inp.plan_ref)
                if frozen.usage.model_calls:  # Pass B/D asked their models
                    self._spend(frozen.usage)
            else:
                frozen = await self._compile_per_pass(compile_)
        except ActivityError as err:
            await self._fail_run("compile", err)
            raise RunFailure(
                f"plan rejected by the compiler: {cause_message(err)}",
                code=ErrorCode.COMPILER_ERROR,
                retryable=False,
            ) from err
        return await self._carry_of(frozen, root)

    async def _instantiate(self) -> FreezeResult:
        """capsule__instantiate: the capsule's sealed plan, every contract re-verified."""
        inp = self._input
        capsule = inp.capsule
        assert capsule is not None
        try:
            frozen = await self._log.call(
                ops.CAPSULE_INSTANTIATE, capsule=capsule, cause_event_id=self._root
            )
        except ActivityError as err:
            await self._fail_run("capsule", err)
            told = cause_type(err)
            raise RunFailure(
                f"capsule {capsule.name}@{capsule.version}: {cause_message(err)}",
                code=parse_code(told) if told else ErrorCode.ERROR,
                retryable=False,
            ) from err
        return frozen

    async def _carry_of(self, frozen: FreezeResult, root: str) -> RunCarry:
        """run.compiled.v1 for the frozen plan, and the state the DAG starts from."""
        inp = self._input
        compiled = await self._log.emit(
            RUN_COMPILED,
            "run",
            root,
            RunCompiled(
                plan_hash=frozen.plan_hash,
                profile_id=frozen.profile_id,
                steps=[n.step_key for n in frozen.nodes],
                compiled_ref=frozen.compiled_ref,
            ),
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
            budget=BudgetState(
                limits=(inp.budget or frozen.budget).capped(inp.quota_tokens),
                spent=self._budget.spent,
            ),
        )

    async def _compile_per_pass(self, compile_: "CompileCall") -> FreezeResult:
        """One activity per pass, as runs started before compile__passes compiled."""
        assert self._input.plan_ref is not None
        ref = self._input.plan_ref
        for op in ops.COMPILE_PER_PASS:
            done = await compile_(op, ref)
            ref = done.output_ref
            if done.usage.model_calls:  # Pass B/D asked their models
                self._spend(done.usage)
        return await compile_(ops.COMPILE_FREEZE, ref)

    async def _fail_run(self, stage: str, err: ActivityError) -> None:
        self._status = "failed"
        cause = err.cause
        details = own_details(cause) if isinstance(cause, ApplicationError) else []
        await self._log.emit(
            RUN_FAILED,
            "run",
            self._root,
            RunFailed(stage=stage, error=cause_message(err), details=details),
        )
