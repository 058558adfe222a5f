"""Budgeting: what in-flight steps reserve, exhaustion that blocks the run, extensions."""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from compiler import budget as budgetbook
    from schemas.budget import BudgetExtension, ExtendBudgetInput, StepProjection
    from schemas.event_catalogue import (
        BUDGET_EXHAUSTED,
        BUDGET_EXTENDED,
        BUDGET_EXTENSION_REFUSED,
    )
    from schemas.run import StepNode
    from schemas.run_events import BudgetExhausted, BudgetExtended, BudgetExtensionRefused
    from workflows.core import RunCore


class Budgeting(RunCore):
    """The run's caps are checked at every start; a refused start blocks the run, never fails it."""

    def _reserved(self) -> list[StepProjection]:
        """Projections of the steps in flight: what they may still spend is not free."""
        return [n.projected for n in self._nodes if n.step_key in self._running]

    def _start_refusal(self, node: StepNode) -> str | None:
        """Why the budget refuses to start this step (or its next pass) now, if it does."""
        return budgetbook.start_refusal(
            self._budget, node.step_key, node.projected, reserved=self._reserved()
        )

    def _extension_refusal(self, inp: ExtendBudgetInput) -> str | None:
        if self._carry is None and not self._finished:
            return "the run is still compiling; its budget is known once it runs"
        return budgetbook.extension_refusal(self._budget, inp, self._finished)

    async def _refuse_extension(self, inp: ExtendBudgetInput, problem: str) -> None:
        """A signalled extension that does not apply is recorded, never applied."""
        await self._log.emit(
            BUDGET_EXTENSION_REFUSED,
            "budget",
            self._root,
            BudgetExtensionRefused(
                tokens=inp.tokens,
                cost_usd=inp.cost_usd,
                reason=inp.reason,
                refused_because=problem,
            ),
            actor=inp.actor,
            id_suffix=f"{inp.actor.id}:{workflow.now().isoformat()}",
        )

    async def _extend(self, inp: ExtendBudgetInput) -> None:
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
        await self._log.emit(
            BUDGET_EXTENDED,
            "budget",
            self._compiled.root_event_id,
            BudgetExtended(
                tokens=inp.tokens,
                cost_usd=inp.cost_usd,
                reason=inp.reason,
                limits=state.limits,
                spent=state.spent,
            ),
            actor=inp.actor,
            id_suffix=str(len(state.extensions)),
        )

    async def _budget_exhausted(self, refused: dict[str, str]) -> None:
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
        await self._log.emit(
            BUDGET_EXHAUSTED,
            "budget",
            self._root,
            BudgetExhausted(
                reason=reason,
                refusals=refused,
                limits=self._budget.limits,
                spent=self._budget.spent,
                resume_with=f"forge budget extend {self._log.run_id} --tokens N [--cost USD]",
            ),
            id_suffix=str(self._budget.exhaustions),
        )

    def _unblock(self) -> None:
        """Something could start again: the run is no longer blocked on its budget."""
        if self._budget.status == "exhausted":
            self._budget = self._budget.model_copy(
                update={"status": "ok", "blocked_reason": None, "blocked_steps": []}
            )
            self._status = "running"
