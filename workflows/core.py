"""RunCore: what one CompiledRunWorkflow holds, and what every part of it shares.

The run's state is one frozen RunState (compiler/run/state.py) that only pure transitions
replace; beside it the core holds what cannot be data: the run's input and log, the steps in
flight, the gate timers, and the DAG loop's bookkeeping for the handlers. The workflow is split
by concern into mixins over this core (front end, gating, budgeting, steps and child runs).
"""

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from compiler.run import state as rs
    from schemas.recipes import RECIPE_TRAIL, TrailEntry
    from schemas.run import RunInput, StepExecuteResult
    from workflows.runlog import RunLog


class RunCore:
    """The run's state and its tasks; the workflow class and its mixins all work on them."""

    def __init__(self, inp: RunInput) -> None:
        self._input = inp  # the run's input, as it was started (or continued)
        self._log = RunLog(inp)
        # A new generation knows its state before any handler runs in its first task.
        self._state = rs.RunState() if inp.carry is None else rs.adopted(rs.RunState(), inp.carry)
        self._running: dict[str, asyncio.Task[StepExecuteResult]] = {}
        self._gate_clocks: dict[str, asyncio.Task[None]] = {}
        self._round_version = 0  # the state's version the DAG loop last scheduled against
        self._scheduling_over = False  # no round will schedule again: updates stop waiting
        self._front_cancel = False  # a cancel in the front end is recorded (PATCH_FRONT_END_CANCEL)

    @property
    def _root(self) -> str:
        """What run-level events are caused by: run.compiled.v1, or run.started.v1 before it."""
        return self._state.root_event_id or self._log.started_id()

    async def _trail_events(self, entries: list[TrailEntry]) -> None:
        """Record decision-trail entries as recipe.trail.v1 events (one append) and in state."""
        if not entries:
            return
        self._state, start = rs.trail_recorded(self._state, entries)
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
