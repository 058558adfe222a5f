"""Child runs: a step that `uses:` a recipe runs it as a child CompiledRunWorkflow."""

from temporalio import workflow
from temporalio.exceptions import ActivityError, ChildWorkflowError

with workflow.unsafe.imports_passed_through():
    from activities.errors import to_application_error
    from compiler import budget as budgetbook
    from compiler.run.sources import recipe_chain_of
    from schemas import names
    from schemas.error_codes import ErrorCode, parse_code
    from schemas.errors import ForgeError
    from schemas.event_catalogue import RUN_COMPLETED
    from schemas.event_ids import event_id
    from schemas.recipes import TrailEntry
    from schemas.run import RunInput, RunResult, StepExecuteResult, StepNode
    from schemas.run_source import ChildSource
    from workflows import operations as ops
    from workflows import policies
    from workflows.causes import app_error, cause_message
    from workflows.core import RunCore
    from workflows.patches import PATCH_CHILD_TENANT_ATTRIBUTE

SUB_RECIPE_FAILED = ErrorCode.SUB_RECIPE_FAILED
# The ApplicationErrors here are caught by the run's own step handling (Stepping), which reads
# their type and details like an activity's: they are built by the one converter, not raised as
# ForgeErrors (a ForgeError fails the workflow).


class ChildRuns(RunCore):
    """`uses:` (seed 004 §4.2): the sub-recipe runs as a child run with its own plan."""

    async def _run_sub_recipe(self, node: StepNode, iteration: int) -> StepExecuteResult:
        """The child's outputs and spend fold back as this step's outcome.

        The call stack of recipes travels with the child; recipes__plan refuses a recipe already
        on it, or a call deeper than the cap. A child that does not complete fails the step,
        saying which steps failed.
        """
        assert node.uses_recipe is not None
        inp = self._input
        chain = recipe_chain_of(inp.source)
        own = (node.source_recipe or "").split("/")[-1]
        if own and (not chain or chain[-1] != own):
            chain.append(own)
        try:
            planned = await self._log.call(
                ops.RECIPES_PLAN,
                slug=node.uses_recipe,
                chain=chain,
                mission=f"{node.uses_recipe} for step {node.step_key} of {inp.run_id}",
            )
        except ActivityError as err:
            cause = app_error(err)
            raise to_application_error(
                ForgeError(
                    cause_message(err),
                    code=parse_code(cause.type)
                    if cause is not None and cause.type
                    else SUB_RECIPE_FAILED,
                    retryable=False,
                    details=[{"attempt": iteration}],
                )
            ) from err
        child_id = f"{inp.run_id}-{node.step_key}"[:120] + (
            f"-{iteration}" if iteration > 1 else ""
        )
        await self._trail_events(
            [
                *planned.trail,
                TrailEntry(
                    verb="dispatch",
                    summary=f"{node.step_key}: uses {node.uses_recipe} as child run {child_id}",
                    detail={"child_run": child_id, "chain": [*chain, node.uses_recipe]},
                    step_key=node.step_key,
                ),
            ]
        )
        child_in = RunInput(
            run_id=child_id,
            source=ChildSource(
                plan_ref=planned.candidate_ref, recipe_chain=[*chain, node.uses_recipe]
            ),
            inputs=inp.inputs,
            profile_ref=inp.profile_ref,
            profile_document=inp.profile_document,
            scope=inp.scope,
            budget=budgetbook.remaining(self._state.budget),
            model_wait_s=inp.model_wait_s,
        )
        tenant = (
            policies.tenant_attributes(inp.scope.tenant)
            if workflow.patched(PATCH_CHILD_TENANT_ATTRIBUTE)
            else None
        )
        try:
            child: RunResult = await workflow.execute_child_workflow(
                names.WORKFLOW, child_in, id=child_id, result_type=RunResult,
                search_attributes=tenant,
            )  # fmt: skip
        except ChildWorkflowError as err:
            raise to_application_error(
                ForgeError(
                    f"sub-recipe {node.uses_recipe} (child run {child_id}) failed: "
                    f"{err.cause or err}",
                    code=SUB_RECIPE_FAILED,
                    retryable=False,
                    details=[{"attempt": iteration}],
                )
            ) from err
        return await self._child_outcome(node, iteration, child_id, child)

    async def _child_outcome(
        self, node: StepNode, iteration: int, child_id: str, child: RunResult
    ) -> StepExecuteResult:
        done = child.status == "completed"
        await self._trail_events(
            [
                TrailEntry(
                    verb="complete" if done else "warn",
                    summary=f"{node.step_key}: child run {child_id} {child.status}",
                    detail={"child_run": child_id, "failed_steps": child.failed_steps},
                    step_key=node.step_key,
                )
            ]
        )
        if not done:
            failures = {
                k: f"{s.error.failure_class}: {s.error.message}"
                for k, s in child.steps.items()
                if s.error is not None
            }
            raise to_application_error(
                ForgeError(
                    f"sub-recipe {node.uses_recipe} (child run {child_id}) {child.status}; "
                    + ("; ".join(f"{k}: {v}" for k, v in failures.items()) or (child.error or "")),
                    code=SUB_RECIPE_FAILED,
                    retryable=False,
                    details=[
                        {"attempt": iteration, "usage": child.budget.spent.model_dump(mode="json")}
                    ],
                )
            )
        last = [child.steps[k] for k in child.steps if child.steps[k].note]
        return StepExecuteResult(
            step_key=node.step_key,
            attempt=1,
            outputs=child.outputs,
            receipt_summary={"child_run": child_id, "steps": len(child.steps)},
            completed_event_id=event_id(child_id, RUN_COMPLETED),
            usage=child.budget.spent,
            iteration=iteration,
            note=last[-1].note if last else f"{node.uses_recipe} completed in {child_id}",
        )
