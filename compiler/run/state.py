"""The run's state as one frozen value, and the pure transitions that are its only writes.

CompiledRunWorkflow holds one RunState and replaces it with what a transition returns; it keeps
only what cannot be data (tasks in flight, timers, handlers) and does the I/O. Every decision a
transition makes (what a failure skips, what a refused gate fails, when the budget blocks)
comes from dag.py, gates.py and compiler/budget.py. Transitions take `now` from the workflow's
clock and never read one; none mutates its input. The front end, steps and the run's end are
here; what a run waits on (gates, the budget) is in waits.py.

`version` counts the changes a person or a service made (gate decisions, budget extensions):
the DAG loop wakes when it moves. `settled` counts the steps this generation settled (a
generation moves the run forward at least one step before it continues as new).
"""

from collections.abc import Mapping
from datetime import datetime

from pydantic import Field

from compiler.run import dag
from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.budget import BudgetLimits, BudgetState, Usage
from schemas.recipes import EffortPolicy, TrailEntry
from schemas.run import (
    FreezeResult,
    GateState,
    RecipeView,
    RunCarry,
    RunStatus,
    RunStatusView,
    StepError,
    StepExecuteResult,
    StepNode,
    StepState,
)

__all__ = [
    "TRAIL_KEPT",
    "RunOutcome",
    "RunState",
    "adopted",
    "cancelled",
    "carry_of",
    "carry_over",
    "closed",
    "gate_step_passed",
    "may_continue_as_new",
    "outcome",
    "recipes_matched",
    "spent",
    "status_view",
    "step_awaiting",
    "step_done",
    "step_failed",
    "step_passed",
    "step_reused",
    "step_started",
    "update_gate",
    "update_step",
    "update_steps",
    "trail_recorded",
    "with_status",
]

TRAIL_KEPT = 200  # trail entries a run keeps in its state (the event log keeps all)


class RunState(FrozenModel):
    """What a run knows: its compiled plan, each step and gate, its budget and recipe trail."""

    status: RunStatus = "compiling"
    plan_hash: str | None = None
    compiled_ref: ArtifactRef | None = None
    root_event_id: str | None = Field(default=None, description="run.compiled.v1, once compiled")
    max_parallel: int = Field(default=1, ge=1)
    history_threshold: int = Field(default=1, ge=1)
    nodes: list[StepNode] = Field(default_factory=list)
    states: dict[str, StepState] = Field(default_factory=dict)
    gates: dict[str, GateState] = Field(default_factory=dict)
    budget: BudgetState = BudgetState()
    recipes: RecipeView = RecipeView()
    generation: int = Field(default=1, ge=1)
    version: int = Field(default=0, ge=0)
    settled: int = Field(default=0, ge=0)
    finished: bool = False

    def node(self, key: str) -> StepNode:
        """The plan's node of step `key`."""
        return next(n for n in self.nodes if n.step_key == key)

    def badges(self) -> dict[str, str]:
        """step_key -> owner/slug of the recipe each step came from."""
        return {n.step_key: n.source_recipe for n in self.nodes if n.source_recipe}


class RunOutcome(FrozenModel):
    """How the steps ended: the failed and skipped ones, and every output in plan order."""

    failed: list[str]
    skipped: dict[str, str]
    outputs: list[ArtifactRef]


def update_step(state: RunState, key: str, **update: object) -> RunState:
    """The state with step `key`'s fields updated."""
    states = dict(state.states)
    states[key] = states[key].model_copy(update=update)
    return state.model_copy(update={"states": states})


def update_steps(state: RunState, changed: Mapping[str, StepState]) -> RunState:
    """The state with `changed` step states written over their old ones."""
    if not changed:
        return state
    return state.model_copy(update={"states": {**state.states, **changed}})


def update_gate(state: RunState, gate_id: str, **update: object) -> RunState:
    """The state with gate `gate_id`'s fields updated."""
    gates = dict(state.gates)
    gates[gate_id] = gates[gate_id].model_copy(update=update)
    return state.model_copy(update={"gates": gates})


# --- the front end ----------------------------------------------------------------------------


def with_status(state: RunState, status: RunStatus) -> RunState:
    """The run's status set (a front end that ended, a run that failed or finished)."""
    return state.model_copy(update={"status": status})


def spent(state: RunState, usage: Usage) -> RunState:
    """Recorded spend added to the run's budget (planning, compile models, steps)."""
    return state.model_copy(
        update={"budget": state.budget.model_copy(update={"spent": state.budget.spent.plus(usage)})}
    )


def recipes_matched(state: RunState, effort: EffortPolicy, seeded_by: str | None) -> RunState:
    """What recipes__match decided: the effort tier and the seeding recipe, a fresh trail."""
    return state.model_copy(update={"recipes": RecipeView(effort=effort, seeded_by=seeded_by)})


def trail_recorded(state: RunState, entries: list[TrailEntry]) -> tuple[RunState, int]:
    """The trail with `entries` added (the latest TRAIL_KEPT kept); the first one's number.

    Entries are numbered from 1 over the run's life, so their event ids never repeat.
    """
    start = state.recipes.recorded
    kept = [*state.recipes.trail, *entries][-TRAIL_KEPT:]
    recipes = state.recipes.model_copy(update={"trail": kept, "recorded": start + len(entries)})
    return state.model_copy(update={"recipes": recipes}), start


def carry_of(
    frozen: FreezeResult,
    *,
    root_event_id: str,
    history_threshold: int | None,
    limits: BudgetLimits | None,
    quota_tokens: int | None,
    state: RunState,
    keep_profile_caps: bool = True,
) -> RunCarry:
    """The compiled run a DAG starts from: every step pending, every gate dormant.

    Spend before the first step (the planner, Pass B/D's models) is already the run's. A
    recipe-seeded run takes its parallelism from the effort tier, never above the profile's; a
    run started with a plan keeps the plan author's settings.
    """
    recipes = state.recipes
    effort = recipes.effort
    max_parallel = frozen.max_parallel
    if effort is not None and recipes.seeded_by is not None:
        max_parallel = max(1, min(max_parallel, effort.max_parallel_steps))
    return RunCarry(
        compiled_ref=frozen.compiled_ref,
        plan_hash=frozen.plan_hash,
        nodes=frozen.nodes,
        states={n.step_key: StepState(step_key=n.step_key) for n in frozen.nodes},
        max_parallel=max_parallel,
        history_threshold=history_threshold or frozen.history_threshold,
        root_event_id=root_event_id,
        generation=1,
        gates={g.gate_id: GateState(spec=g, approver_role=g.approver_role) for g in frozen.gates},
        budget=BudgetState(
            limits=(
                _overridden(frozen.budget, limits)
                if keep_profile_caps
                else (limits or frozen.budget)  # as runs before PATCH_PROFILE_CAPS
            ).capped(quota_tokens),
            spent=state.budget.spent,
        ),
        recipes=recipes,
    )


def _overridden(profile: BudgetLimits, given: BudgetLimits | None) -> BudgetLimits:
    """The profile's caps with each cap the submitter gave in its place; the others stay."""
    if given is None:
        return profile
    return BudgetLimits(
        max_tokens=profile.max_tokens if given.max_tokens is None else given.max_tokens,
        max_cost_usd=profile.max_cost_usd if given.max_cost_usd is None else given.max_cost_usd,
    )


def adopted(state: RunState, carry: RunCarry) -> RunState:
    """The run as `carry` says (compiled, or a new generation); it runs unless its budget blocks."""
    return state.model_copy(
        update={
            "generation": carry.generation,
            "plan_hash": carry.plan_hash,
            "compiled_ref": carry.compiled_ref,
            "root_event_id": carry.root_event_id,
            "max_parallel": carry.max_parallel,
            "history_threshold": carry.history_threshold,
            "nodes": carry.nodes,
            "states": dict(carry.states),
            "gates": dict(carry.gates),
            "budget": carry.budget,
            "recipes": carry.recipes,
            "status": "budget_exhausted" if carry.budget.status == "exhausted" else "running",
        }
    )


def carry_over(state: RunState) -> RunCarry:
    """What the next generation starts from (continue-as-new)."""
    assert state.compiled_ref is not None and state.root_event_id is not None
    assert state.plan_hash is not None
    return RunCarry(
        compiled_ref=state.compiled_ref,
        plan_hash=state.plan_hash,
        nodes=state.nodes,
        states=dict(state.states),
        max_parallel=state.max_parallel,
        history_threshold=state.history_threshold,
        root_event_id=state.root_event_id,
        generation=state.generation + 1,
        gates=dict(state.gates),
        budget=state.budget,
        recipes=state.recipes,
    )


# --- steps ------------------------------------------------------------------------------------


def step_started(state: RunState, key: str, now: datetime) -> RunState:
    """A step's first pass went out."""
    return update_step(state, key, status="in_progress", started_at=now)


def gate_step_passed(state: RunState, key: str, now: datetime) -> RunState:
    """An approved gate step: it has nothing else to do."""
    return update_step(state, key, status="done", finished_at=now)


def step_reused(
    state: RunState, key: str, outputs: list[ArtifactRef], resumed_from: str, now: datetime
) -> RunState:
    """A resumed run adopted the step's verified outputs from the run it resumes."""
    return update_step(
        state,
        key,
        status="done",
        started_at=now,
        finished_at=now,
        outputs=outputs,
        receipt={"reused_from": resumed_from},
    )


def step_passed(state: RunState, result: StepExecuteResult) -> tuple[RunState, StepState]:
    """A pass's result: its spend recorded; the step state it earns (not yet written).

    The workflow writes it as it stands when a loop goes on, or done (step_done) when not.
    """
    key = result.step_key
    step = state.states[key]
    state = spent(state, result.usage.since(step.usage))
    state = state.model_copy(update={"settled": state.settled + 1})
    passed = step.model_copy(
        update={
            "attempts": result.attempt,
            "outputs": result.outputs,
            "receipt": result.receipt_summary,
            "usage": result.usage,
            "note": result.note,
            "iterations": result.iteration if state.node(key).loop is not None else 0,
        }
    )
    return state, passed


def step_done(state: RunState, passed: StepState, now: datetime | None) -> RunState:
    """The step as it passed: done at `now`, or still looping (None)."""
    if now is not None:
        passed = passed.model_copy(update={"status": "done", "finished_at": now})
    return update_steps(state, {passed.step_key: passed})


def step_failed(
    state: RunState, key: str, error: StepError, attempts: int, usage: Usage, now: datetime
) -> RunState:
    """The step failed: its error recorded, and what depends on it skipped.

    A loop step whose later pass failed keeps its last good pass's results: done, not failed.
    """
    step = state.states[key]
    state = spent(state, usage.since(step.usage))
    state = state.model_copy(update={"settled": state.settled + 1})
    if state.node(key).loop is not None and step.iterations >= 1:
        return update_step(state, key, status="done", finished_at=now, usage=usage)
    state = update_step(
        state, key, status="error", finished_at=now, attempts=attempts, error=error, usage=usage
    )
    return update_steps(state, dag.skip_dependents(state.nodes, state.states, key))


def step_awaiting(state: RunState, key: str) -> RunState:
    """The step waits on its pending gate."""
    return update_step(state, key, status="awaiting_approval")


# --- the end ----------------------------------------------------------------------------------


def cancelled(state: RunState) -> tuple[RunState, list[str]]:
    """The run cancelled: every step not yet ended is skipped; the steps it stopped."""
    stopped = [k for k, s in state.states.items() if s.status in ("pending", "in_progress")]
    skipped = {
        k: state.states[k].model_copy(
            update={"status": "skipped", "skipped_because": "run cancelled"}
        )
        for k in stopped
    }
    return update_steps(with_status(state, "cancelled"), skipped), stopped


def closed(state: RunState) -> RunState:
    """The run has finished: nothing is decided or extended any more."""
    return state.model_copy(update={"finished": True})


def outcome(state: RunState) -> RunOutcome:
    """The failed and skipped steps (in state order) and the outputs (in plan order)."""
    return RunOutcome(
        failed=[k for k, s in state.states.items() if s.status == "error"],
        skipped={
            k: s.skipped_because or "" for k, s in state.states.items() if s.status == "skipped"
        },
        outputs=[ref for n in state.nodes for ref in state.states[n.step_key].outputs],
    )


def may_continue_as_new(state: RunState) -> bool:
    """Whether this generation may hand over: it settled a step and work is left."""
    if state.settled == 0:  # every generation moves the run forward at least one step
        return False
    return any(s.status in ("pending", "in_progress") for s in state.states.values())


def status_view(state: RunState, run_id: str) -> RunStatusView:
    """The `status` query: the plan with per-step state."""
    return RunStatusView(
        run_id=run_id,
        status=state.status,
        plan_hash=state.plan_hash,
        generation=state.generation,
        steps=[state.states[n.step_key] for n in state.nodes],
        order=[n.step_key for n in state.nodes],
        gates=list(state.gates.values()),
        budget=state.budget,
        recipes=state.recipes,
        badges=state.badges(),
    )
