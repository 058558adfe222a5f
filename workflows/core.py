"""RunCore: the state one CompiledRunWorkflow keeps, and what every part of it shares.

The workflow is split by concern into mixins over this core (front end, gating, budgeting,
steps and child runs); each reads and writes the state declared here and emits through one
RunLog, so no method needs the run's input passed in.
"""

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from schemas.budget import BudgetState, Usage
    from schemas.recipes import RECIPE_TRAIL, TrailEntry
    from schemas.run import (
        GateState,
        RecipeView,
        RunCarry,
        RunInput,
        RunStatus,
        StepExecuteResult,
        StepNode,
        StepState,
    )
    from workflows.runlog import RunLog

TRAIL_KEPT = 200  # trail entries a run keeps in its state (the event log keeps all)


class RunCore:
    """The run's state; the workflow class and its mixins all work on it."""

    def __init__(self, inp: RunInput) -> None:
        self._input = inp  # the run's input, with the plan the front end settled on
        self._log = RunLog(inp)
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

    @property
    def _compiled(self) -> RunCarry:
        """The compiled run (only once the front end is done)."""
        assert self._carry is not None, "the run has not compiled yet"
        return self._carry

    @property
    def _root(self) -> str:
        """What run-level events are caused by: run.compiled.v1, or run.started.v1 before it."""
        return self._carry.root_event_id if self._carry is not None else self._log.started_id()

    def _node(self, key: str) -> StepNode:
        return next(n for n in self._nodes if n.step_key == key)

    def _badges(self) -> dict[str, str]:
        return {n.step_key: n.source_recipe for n in self._nodes if n.source_recipe}

    def _spend(self, usage: Usage) -> None:
        self._budget = self._budget.model_copy(update={"spent": self._budget.spent.plus(usage)})

    async def _trail_events(self, entries: list[TrailEntry]) -> None:
        """Record decision-trail entries as recipe.trail.v1 events (one append) and in state."""
        if not entries:
            return
        start = self._recipes.recorded
        kept = [*self._recipes.trail, *entries][-TRAIL_KEPT:]
        self._recipes = self._recipes.model_copy(
            update={"trail": kept, "recorded": start + len(entries)}
        )
        root = self._root
        drafts = [
            self._log.draft(
                RECIPE_TRAIL,
                root,
                # A trail entry stores what it says: no null fields (as ever).
                TrailEntry.model_validate(e.model_dump(mode="json", exclude_none=True)),
                id_suffix=str(start + i + 1),
            )
            for i, e in enumerate(entries)
        ]
        await self._log.append("recipes", drafts)
