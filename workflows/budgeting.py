"""Budgeting: what in-flight steps reserve, exhaustion that blocks the run, extensions."""

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from compiler import budget as budgetbook
    from compiler.run import waits
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
        return waits.reserved(self._state, self._running)

    def _start_refusal(self, node: StepNode) -> str | None:
        """Why the budget refuses to start this step (or its next pass) now, if it does."""
        return waits.start_refusal(self._state, node, self._running)

    def _extension_refusal(self, inp: ExtendBudgetInput) -> str | None:
        state = self._state
        if state.root_event_id is None and not state.finished:
            return "the run is still compiling; its budget is known once it runs"
        return budgetbook.extension_refusal(state.budget, inp, state.finished)

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
        self._state = waits.budget_extended(self._state, extension)
        state = self._state.budget
        assert self._state.root_event_id is not None  # refused while compiling
        await self._log.emit(
            BUDGET_EXTENDED,
            "budget",
            self._state.root_event_id,
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
        self._state, new = waits.budget_blocked(self._state, refused)
        if not new:  # still short after an extension: same block, no new event
            return
        budget = self._state.budget
        await self._log.emit(
            BUDGET_EXHAUSTED,
            "budget",
            self._root,
            BudgetExhausted(
                reason=next(iter(refused.values())),
                refusals=refused,
                limits=budget.limits,
                spent=budget.spent,
                resume_with=f"forge budget extend {self._log.run_id} --tokens N [--cost USD]",
            ),
            id_suffix=str(budget.exhaustions),
        )

    def _unblock(self) -> None:
        """Something could start again: the run is no longer blocked on its budget."""
        self._state = waits.budget_unblocked(self._state)
