"""The front end of a run: run.started, the recipe match, the planner, the compile passes."""

from collections.abc import Awaitable
from typing import Any, Protocol, TypeVar

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from pydantic import BaseModel

    from compiler.run import state as rs
    from compiler.run.sources import objective_of, plan_ref_of, run_started
    from schemas.artifacts import ArtifactRef
    from schemas.error_codes import ErrorCode, parse_code
    from schemas.errors import RunFailure
    from schemas.event_catalogue import RUN_COMPILED, RUN_COMPLETED, RUN_FAILED, RUN_STARTED
    from schemas.recipes import RUN_TAGGED, TrailEntry
    from schemas.run import CompileInput, FreezeResult, RunCarry, RunResult
    from schemas.run_events import RunCompiled, RunCompleted, RunFailed, RunTagged
    from schemas.run_source import CapsuleSource, ChildSource, ObjectiveSource
    from workflows import operations as ops
    from workflows.causes import cancelled, cause_message, cause_type, own_details
    from workflows.core import RunCore
    from workflows.patches import (
        PATCH_FRONT_END,
        PATCH_FRONT_END_CANCEL,
        PATCH_PLANNER,
        PATCH_PROFILE_CAPS,
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
        source = self._input.source
        # A cancel waits for the activity in flight to stop, and is recorded (run.py).
        self._front_cancel = workflow.patched(PATCH_FRONT_END_CANCEL)
        started = run_started(self._input)
        # Every source but an objective has its plan (a capsule its sealed one).
        if not isinstance(source, ObjectiveSource) and workflow.patched(PATCH_FRONT_END):
            # A plan run's front end takes a moment: run.started and the recipe trail go out
            # with run.compiled (or run.failed), in one append.
            self._log.hold("run", [self._log.draft(RUN_STARTED, None, started)])
        else:
            await self._log.emit(RUN_STARTED, "run", None, started)
        plan_ref = plan_ref_of(source)
        # A child run's recipe and a capsule's plan are settled: no recipe match, no planner.
        if not isinstance(source, ChildSource | CapsuleSource) and workflow.patched(PATCH_RECIPES):
            ended, plan_ref = await self._match_recipes(objective_of(source), plan_ref)
            if ended is not None:
                return ended
        self._state = rs.adopted(self._state, await self._compile(plan_ref))
        return None

    async def _match_recipes(
        self, objective: str | None, plan_ref: ArtifactRef | None
    ) -> tuple[RunResult | None, ArtifactRef | None]:
        """recipes__match: the trail, then a recipe-seeded plan, no plan, or a clear refusal.

        A run started with a plan keeps it (the match is recorded for the trail); a run started
        with an objective compiles the plan of a high-confidence recipe without a planner call.
        Returns how the run ended here (trivial), if it did, and the plan it compiles.
        """
        try:
            found = await self._log.call(
                ops.RECIPES_MATCH, self._stoppable(), objective=objective, plan_ref=plan_ref
            )
        except ActivityError as err:
            if cancelled(err):
                raise
            if plan_ref is not None:  # the plan stands; the trail says why it is thin
                summary = f"recipe match failed: {cause_message(err)}"
                await self._trail_events([TrailEntry(verb="warn", summary=summary)])
                return None, plan_ref
            await self._fail_run("recipes", err)
            raise RunFailure(
                f"no plan: {cause_message(err)}", code=ErrorCode.COMPILER_ERROR, retryable=False
            ) from err
        self._state = rs.recipes_matched(self._state, found.effort, found.seeded_by)
        await self._trail_events(found.trail)
        if found.outcome == "trivial":
            self._state = rs.with_status(self._state, "completed")
            await self._log.emit(
                RUN_COMPLETED, "run", self._root, RunCompleted(steps=0, reason=found.message)
            )
            self._state = rs.closed(self._state)
            ended = RunResult(
                run_id=self._log.run_id,
                scope=self._log.scope,
                status="completed",
                recipes=self._state.recipes,
            )
            return ended, plan_ref
        if found.outcome == "needs-planner" and workflow.patched(PATCH_PLANNER):
            assert objective is not None
            return None, await self._plan_with_model(objective, found.hints)
        if found.outcome == "needs-planner":
            self._state = rs.with_status(self._state, "failed")
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
            return None, found.candidate_ref
        return None, plan_ref

    async def _plan_with_model(self, objective: str, hints: list[str]) -> ArtifactRef:
        """compile__plan: the planner model fills the Pass A template (Pass A with a model)."""
        inp = self._input
        source = inp.source
        provider = source.planner_provider if isinstance(source, ObjectiveSource) else None
        try:
            planned = await self._log.call(
                ops.COMPILE_PLAN,
                self._stoppable(model_routing(provider, inp.model_wait_s)),
                objective=objective,
                inputs=inp.inputs,
                hints=hints,
                params=inp.params,
                profile_ref=inp.profile_ref,
                profile_document=inp.profile_document,
                cause_event_id=self._root,
            )
        except ActivityError as err:
            if cancelled(err):
                raise
            await self._fail_run("plan", err)
            why = cause_message(err)
            if unserved(err):
                why = unserved_message(
                    "the planner call",
                    provider,
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
        # Planning is spend of the run too: it counts against caps.
        self._state = rs.spent(self._state, planned.usage)
        repairs = f", after {planned.repairs} repair(s)" if planned.repairs else ""
        summary = f"planned by the planner model: {planned.steps} step(s){repairs}"
        await self._trail_events([TrailEntry(verb="note", summary=summary)])
        await self._log.emit(
            RUN_TAGGED,
            "run",
            self._root,
            RunTagged(tags=["planner"], plan_ref=planned.candidate_ref),
        )
        return planned.candidate_ref

    async def _compile(self, plan_ref: ArtifactRef | None) -> RunCarry:
        """Passes B..E in compiler/plan/pipeline.py's order (compile__passes); E freezes."""
        inp = self._input
        root = self._root
        if isinstance(inp.source, CapsuleSource):
            return await self._carry_of(await self._instantiate(inp.source), root)
        assert plan_ref is not None

        def compile_(op: "ops.Operation[CompileInput, Out]", ref: ArtifactRef) -> Awaitable[Out]:
            return self._log.call(
                op,
                self._stoppable() if op is ops.COMPILE_PASSES else None,
                source_ref=ref,
                profile_ref=inp.profile_ref,
                profile_document=inp.profile_document,
                cause_event_id=root,
            )

        try:
            if workflow.patched(PATCH_FRONT_END):
                frozen = await compile_(ops.COMPILE_PASSES, plan_ref)
                if frozen.usage.model_calls:  # Pass B/D asked their models
                    self._state = rs.spent(self._state, frozen.usage)
            else:
                frozen = await self._compile_per_pass(compile_, plan_ref)
        except ActivityError as err:
            if cancelled(err):
                raise
            await self._fail_run("compile", err)
            raise RunFailure(
                f"plan rejected by the compiler: {cause_message(err)}",
                code=ErrorCode.COMPILER_ERROR,
                retryable=False,
            ) from err
        return await self._carry_of(frozen, root)

    async def _instantiate(self, source: CapsuleSource) -> FreezeResult:
        """capsule__instantiate: the capsule's sealed plan, every contract re-verified."""
        capsule = source.capsule
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
        return rs.carry_of(
            frozen,
            root_event_id=compiled,
            history_threshold=inp.history_threshold,
            limits=inp.budget,
            quota_tokens=inp.quota_tokens,
            state=self._state,
            keep_profile_caps=workflow.patched(PATCH_PROFILE_CAPS),
        )

    async def _compile_per_pass(self, compile_: CompileCall, plan_ref: ArtifactRef) -> FreezeResult:
        """One activity per pass, as runs started before compile__passes compiled."""
        ref = plan_ref
        for op in ops.COMPILE_PER_PASS:
            done = await compile_(op, ref)
            ref = done.output_ref
            if done.usage.model_calls:  # Pass B/D asked their models
                self._state = rs.spent(self._state, done.usage)
        return await compile_(ops.COMPILE_FREEZE, ref)

    def _stoppable(self, options: dict[str, Any] | None = None) -> dict[str, Any]:
        """A front-end activity's options: cancelling the run waits for it to stop (patched)."""
        if not self._front_cancel:
            return dict(options or {})
        wait = workflow.ActivityCancellationType.WAIT_CANCELLATION_COMPLETED
        return {**(options or {}), "cancellation_type": wait}

    async def _fail_run(self, stage: str, err: ActivityError) -> None:
        self._state = rs.with_status(self._state, "failed")
        cause = err.cause
        details = own_details(cause) if isinstance(cause, ApplicationError) else []
        await self._log.emit(
            RUN_FAILED,
            "run",
            self._root,
            RunFailed(stage=stage, error=cause_message(err), details=details),
        )
