"""The run's state machine without Temporal: RunState and its pure transitions.

A scheduler like the workflow's DAG loop drives random plans through the transitions (steps
pass or fail, gates are approved or rejected, the budget blocks and is extended, the run may be
cancelled) and the properties hold after every transition.
"""

from __future__ import annotations

import random
from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.run import dag, waits
from compiler.run import state as rs
from schemas.budget import BudgetExtension, BudgetLimits, BudgetState, StepProjection, Usage
from schemas.compiled import GateSpec
from schemas.events import Actor
from schemas.recipes import EffortPolicy, LoopSpec, TrailEntry
from schemas.run import (
    DecideGateInput,
    FreezeResult,
    GateState,
    RecipeView,
    RunCarry,
    StepError,
    StepExecuteResult,
    StepNode,
    StepState,
)
from tests.compiler.run.test_dag import ancestors, dags, node, ref
from tests.compiler.run.test_gates import ALICE, HASH, NOW

TICK = timedelta(seconds=1)
COMPILED = ref("meta/compiled.json", "c" * 64)


def compiled(nodes: list[StepNode], gated: set[str] = frozenset(), **budget: int) -> rs.RunState:
    """A freshly compiled run of `nodes`; steps in `gated` wait on a gate of their own."""
    nodes = [
        n.model_copy(update={"gate_id": f"g-{n.step_key}"}) if n.step_key in gated else n
        for n in nodes
    ]
    gates = {
        f"g-{k}": GateState(
            spec=GateSpec(
                gate_id=f"g-{k}",
                gated_step_keys=[k],
                contract_hash=HASH,
                approver_role="ops",
                prompt="ok?",
                evidence=[],
                dedupe_key=f"g-{k}",
                reason="a person approves",
            ),
            approver_role="ops",
        )
        for k in sorted(gated)
    }
    carry = RunCarry(
        compiled_ref=COMPILED,
        plan_hash="sha256:" + "p" * 64,
        nodes=nodes,
        states={n.step_key: StepState(step_key=n.step_key) for n in nodes},
        max_parallel=3,
        history_threshold=1000,
        root_event_id="r:run.compiled.v1",
        generation=1,
        gates=gates,
        budget=BudgetState(limits=BudgetLimits(**budget)),
    )
    return rs.adopted(rs.RunState(), carry)


def passed(key: str, tokens: int = 0, note: str | None = None) -> StepExecuteResult:
    return StepExecuteResult(
        step_key=key,
        attempt=1,
        outputs=[ref(f"output/{key}.json", key)],
        receipt_summary={},
        completed_event_id=f"r:step.completed.v1:{key}",
        usage=Usage(output_tokens=tokens),
        note=note,
    )


def one_step_frozen(budget: BudgetLimits | None = None) -> FreezeResult:
    """A frozen one-step plan (step a), with the profile's budget when given."""
    return FreezeResult(
        compiled_ref=COMPILED,
        plan_hash="sha256:" + "p" * 64,
        nodes=[node("a", [])],
        max_parallel=4,
        history_threshold=500,
        profile_id="default",
        **({"budget": budget} if budget is not None else {}),
    )


def frozen_dump(state: rs.RunState) -> str:
    return state.model_dump_json()


class Driver:
    """The DAG loop's decisions over a RunState, with the I/O replaced by random outcomes."""

    def __init__(self, state: rs.RunState, rng: random.Random, failing: set[str]) -> None:
        self.state = state
        self.rng = rng
        self.failing = failing
        self.running: list[str] = []
        self.now = NOW
        self.settles = 0
        self.decisions = 0
        self.spend = 0

    def apply(self, fn, *args):
        """Run a transition, checking it left its input as it was."""
        before = frozen_dump(self.state)
        old = self.state
        result = fn(self.state, *args)
        assert frozen_dump(old) == before, f"{fn.__name__} mutated its input"
        self.now += TICK
        return result

    def round(self) -> bool:
        """One scheduling round; False when nothing can happen any more."""
        changed = False
        for n in self.state.nodes:
            st_ = self.state.states[n.step_key]
            if n.gate_id and st_.status == "pending" and dag.deps_done(n, self.state.states):
                if self.state.gates[n.gate_id].status == "dormant":
                    self.state = self.apply(waits.gate_requested, n, self.now)
                    changed = True
        for gate_id, gate in self.state.gates.items():
            if gate.status == "pending" and self.rng.random() < 0.5:
                decision = self.rng.choice(["approve", "approve", "reject"])
                inp = DecideGateInput(
                    gate_id=gate_id,
                    decision=decision,
                    actor=ALICE,
                    reason="checked",
                    contract_hash=HASH,
                )
                self.state = self.apply(waits.gate_decided, inp, self.now)
                self.decisions += 1
                changed = True
        self.state = self.apply(waits.gates_settled, self.now)
        for n in dag.ready(self.state.nodes, self.state.states, self.state.gates):
            if n.step_key in self.running:
                continue
            self.state = self.apply(rs.step_started, n.step_key, self.now)
            self.running.append(n.step_key)
            changed = True
        if self.running:
            key = self.running.pop(self.rng.randrange(len(self.running)))
            self.settle(key)
            changed = True
        return changed

    def settle(self, key: str) -> None:
        self.settles += 1
        if key in self.failing:
            error = StepError(failure_class="CODE_ERROR", message="exit 1")
            self.state = self.apply(rs.step_failed, key, error, 2, Usage(), self.now)
            return
        tokens = self.rng.randint(0, 50)
        self.spend += tokens
        self.state, ok = self.apply(rs.step_passed, passed(key, tokens))
        self.state = self.apply(rs.step_done, ok, self.now)


def check(state: rs.RunState, nodes: list[StepNode]) -> None:
    """What holds after every transition."""
    by_key = {n.step_key: n for n in nodes}
    for key, st_ in state.states.items():
        if st_.status in ("in_progress", "done") and st_.receipt.get("reused_from") is None:
            assert all(state.states[d].status == "done" for d in by_key[key].depends_on), key
        if st_.status == "skipped" and st_.skipped_because != "run cancelled":
            blocked = ancestors(nodes, key)
            assert any(state.states[a].status in ("error", "skipped") for a in blocked), key
        if st_.status == "error":
            for other in nodes:
                if key in ancestors(nodes, other.step_key):
                    assert state.states[other.step_key].status == "skipped", other.step_key


@settings(max_examples=150, deadline=None)
@given(
    nodes=dags(),
    failing_pick=st.lists(st.integers(0, 11), max_size=3),
    gated_pick=st.lists(st.integers(0, 11), max_size=3),
    seed=st.integers(0, 10_000),
)
def test_random_runs_keep_the_state_machines_promises(nodes, failing_pick, gated_pick, seed):
    keys = [n.step_key for n in nodes]
    failing = {keys[i % len(keys)] for i in failing_pick}
    gated = {keys[i % len(keys)] for i in gated_pick}
    driver = Driver(compiled(nodes, gated), random.Random(seed), failing)
    for _ in range(200):
        if not driver.round():
            break
        check(driver.state, driver.state.nodes)
    state = driver.state
    # Nothing is left half-done: each step ended, or waits on a gate nobody decided.
    for key, st_ in state.states.items():
        assert st_.status in ("done", "error", "skipped", "awaiting_approval", "pending"), key
        if st_.status in ("pending", "awaiting_approval"):
            n = state.node(key)
            waiting_on = n.gate_id is not None and state.gates[n.gate_id].status == "pending"
            upstream_waits = any(
                state.states[a].status in ("pending", "awaiting_approval")
                for a in ancestors(state.nodes, key)
            )
            assert waiting_on or upstream_waits, key
    assert state.version == driver.decisions
    assert state.settled == driver.settles
    assert state.budget.spent.output_tokens == driver.spend
    done = [k for k, s in state.states.items() if s.status == "done"]
    out = rs.outcome(state)
    assert sorted(out.failed) == sorted(k for k, s in state.states.items() if s.status == "error")
    assert [r.path for r in out.outputs] == [
        f"output/{n.step_key}.json" for n in state.nodes if n.step_key in done
    ]


@settings(max_examples=100, deadline=None)
@given(nodes=dags(), failing_pick=st.lists(st.integers(0, 11), max_size=3), seed=st.integers())
def test_the_end_state_does_not_depend_on_the_order_steps_finish_in(nodes, failing_pick, seed):
    keys = [n.step_key for n in nodes]
    failing = {keys[i % len(keys)] for i in failing_pick}
    ends = []
    for order_seed in (seed, seed + 1):
        driver = Driver(compiled(nodes), random.Random(order_seed), failing)
        while driver.round():
            pass
        ends.append({k: s.status for k, s in driver.state.states.items()})
    assert ends[0] == ends[1]


@settings(max_examples=100, deadline=None)
@given(nodes=dags(), seed=st.integers(0, 1000), stop_after=st.integers(0, 6))
def test_a_cancel_skips_exactly_the_steps_not_yet_ended(nodes, seed, stop_after):
    driver = Driver(compiled(nodes), random.Random(seed), set())
    for _ in range(stop_after):
        driver.round()
    before = driver.state
    after, stopped = rs.cancelled(before)
    assert after.status == "cancelled"
    assert stopped == [
        k for k, s in before.states.items() if s.status in ("pending", "in_progress")
    ]
    for key, st_ in after.states.items():
        if key in stopped:
            assert (st_.status, st_.skipped_because) == ("skipped", "run cancelled")
        else:
            assert st_ == before.states[key]


@settings(max_examples=100, deadline=None)
@given(nodes=dags(), seed=st.integers(0, 1000), rounds=st.integers(1, 8))
def test_a_new_generation_starts_from_exactly_what_the_last_one_carried(nodes, seed, rounds):
    driver = Driver(compiled(nodes, {nodes[-1].step_key}), random.Random(seed), set())
    for _ in range(rounds):
        driver.round()
    state = driver.state
    carry = rs.carry_over(state)
    assert carry.generation == state.generation + 1
    again = rs.adopted(rs.RunState(), carry)
    same = ("plan_hash", "compiled_ref", "root_event_id", "nodes", "states", "gates", "budget")
    for field in same:
        assert getattr(again, field) == getattr(state, field), field
    # A generation starts counting its own settled steps and changes afresh.
    assert (again.settled, again.version, again.finished) == (0, 0, False)
    assert again.status == "running"


def test_a_loop_step_that_fails_a_later_pass_keeps_its_last_good_results():
    loop_node = node("l", []).model_copy(update={"loop": LoopSpec(mode="until-dry", max=3)})
    state = compiled([loop_node, node("after", ["l"])])
    state = rs.step_started(state, "l", NOW)
    state, first = rs.step_passed(state, passed("l", 10, note="found 2"))
    state = rs.step_done(state, first.model_copy(update={"iterations": 1}), None)
    error = StepError(failure_class="CODE_ERROR", message="exit 1")
    state = rs.step_failed(state, "l", error, 2, Usage(output_tokens=15), NOW)
    assert state.states["l"].status == "done" and state.states["l"].error is None
    assert state.states["l"].outputs == first.outputs
    assert state.states["after"].status == "pending"  # nothing downstream is skipped
    assert state.budget.spent.output_tokens == 15  # the failed pass's spend counts
    assert state.settled == 2


def test_the_budget_blocks_once_per_exhaustion_and_an_extension_unblocks():
    state = compiled([node("a", []).model_copy(update={"projected": StepProjection(tokens=50)})])
    state = state.model_copy(
        update={"budget": state.budget.model_copy(update={"limits": BudgetLimits(max_tokens=10)})}
    )
    refusal = waits.start_refusal(state, state.node("a"), running=())
    assert refusal is not None and "projects 50 tokens" in refusal
    state, new = waits.budget_blocked(state, {"a": refusal})
    assert new and state.status == "budget_exhausted" and state.budget.exhaustions == 1
    state, again = waits.budget_blocked(state, {"a": refusal + " (later)"})
    assert not again and state.budget.exhaustions == 1
    assert state.budget.blocked_reason == refusal + " (later)"
    ext = BudgetExtension(tokens=100, cost_usd=0, actor=ALICE, reason="more", extended_at=NOW)
    state = waits.budget_extended(state, ext)
    assert state.version == 1 and state.budget.limits.max_tokens == 110
    assert waits.start_refusal(state, state.node("a"), running=()) is None
    state = waits.budget_unblocked(state)
    assert state.status == "running" and state.budget.status == "ok"
    assert state.budget.blocked_steps == []


def test_steps_in_flight_hold_their_projection():
    nodes = [node(k, []).model_copy(update={"projected": StepProjection(tokens=40)}) for k in "ab"]
    state = compiled(nodes, max_tokens=60)
    assert waits.start_refusal(state, state.node("b"), running=()) is None
    refusal = waits.start_refusal(state, state.node("b"), running={"a"})
    assert refusal is not None and "40 reserved by steps in flight" in refusal


def test_the_front_end_records_effort_trail_and_compiles_with_its_parallelism():
    state = rs.RunState()
    effort = EffortPolicy(
        tier="trivial",
        model_tier="minimal",
        thinking_budget_tokens=0,
        max_parallel_steps=1,
        orchestration="solo",
        plan=True,
    )
    state = rs.recipes_matched(state, effort, "forge/count-rows")
    entries = [TrailEntry(verb="note", summary=f"entry {i}") for i in range(rs.TRAIL_KEPT + 5)]
    state, start = rs.trail_recorded(state, entries[:3])
    state, second = rs.trail_recorded(state, entries[3:])
    assert (start, second) == (0, 3)
    assert state.recipes.recorded == len(entries) and len(state.recipes.trail) == rs.TRAIL_KEPT
    state = rs.spent(state, Usage(output_tokens=7))  # the planner's spend
    frozen = one_step_frozen()
    carry = rs.carry_of(
        frozen,
        root_event_id="r:run.compiled.v1",
        history_threshold=None,
        limits=BudgetLimits(max_tokens=1000),
        quota_tokens=300,
        state=state,
    )
    assert carry.max_parallel == 1  # the effort tier's, never above the profile's
    assert carry.budget.limits.max_tokens == 300 and carry.budget.spent.output_tokens == 7
    assert carry.recipes == state.recipes and carry.history_threshold == 500
    running = rs.adopted(state, carry)
    assert running.status == "running" and running.root_event_id == "r:run.compiled.v1"
    assert rs.status_view(running, "r").order == ["a"]
    # A run started with a plan keeps the plan author's parallelism.
    plain = rs.carry_of(
        frozen,
        root_event_id="x",
        history_threshold=80,
        limits=None,
        quota_tokens=None,
        state=rs.RunState(recipes=RecipeView(effort=effort)),
    )
    assert plain.max_parallel == 4 and plain.history_threshold == 80


def test_gate_timers_remind_then_escalate_to_the_escalation_role():
    state = compiled([node("a", [])], {"a"})
    state = waits.gate_requested(state, state.node("a"), NOW)
    assert state.states["a"].status == "awaiting_approval"
    assert state.gates["g-a"].status == "pending" and state.gates["g-a"].requested_at == NOW
    state = waits.gate_reminded(waits.gate_reminded(state, "g-a"), "g-a")
    assert state.gates["g-a"].reminders == 2
    spec = state.gates["g-a"].spec.model_copy(update={"escalate_to_role": "finance"})
    state = rs.update_gate(state, "g-a", spec=spec)
    state = waits.gate_escalated(state, "g-a")
    assert state.gates["g-a"].escalated and state.gates["g-a"].approver_role == "finance"
    rejected = DecideGateInput(
        gate_id="g-a",
        decision="reject",
        actor=Actor(id="bo", name="Bo", role="finance", kind="human"),
        reason="no",
        contract_hash=HASH,
    )
    state = waits.gates_settled(waits.gate_decided(state, rejected, NOW), NOW)
    assert state.states["a"].status == "error"
    assert state.states["a"].error.failure_class == "GATE_REJECTED"


def test_a_cap_given_at_submit_keeps_the_profiles_other_caps():
    """`forge run "OBJECTIVE" --max-tokens 3000`: the profile's cost cap stays (issue 34 §3)."""
    frozen = one_step_frozen(BudgetLimits(max_tokens=200_000, max_cost_usd=5.0))

    def limits(given: BudgetLimits | None) -> BudgetLimits:
        carry = rs.carry_of(
            frozen,
            root_event_id="x",
            history_threshold=None,
            limits=given,
            quota_tokens=None,
            state=rs.RunState(),
        )
        return carry.budget.limits

    assert limits(BudgetLimits(max_tokens=3000)) == BudgetLimits(max_tokens=3000, max_cost_usd=5.0)
    assert limits(BudgetLimits(max_cost_usd=0.5)) == BudgetLimits(
        max_tokens=200_000, max_cost_usd=0.5
    )
    assert limits(None) == frozen.budget
