"""Properties of the run's gate and budget decisions over random states (no Temporal)."""

from __future__ import annotations

from datetime import timedelta

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler import budget as budgetbook
from compiler.run import dag, gates
from schemas.budget import (
    BudgetExtension,
    BudgetLimits,
    BudgetState,
    ExtendBudgetInput,
    StepProjection,
    Usage,
)
from schemas.events import Actor
from schemas.run import StepState
from tests.compiler.run.test_dag import ancestors, dags
from tests.compiler.run.test_gates import ALICE, HASH, NOW, decide, gate

OTHER = "sha256:" + "2" * 64
STATUSES = ("dormant", "pending", "approved", "rejected", "changes_requested")

# --- gates -------------------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(
    status=st.sampled_from(STATUSES),
    finished=st.booleans(),
    known=st.booleans(),
    right_hash=st.booleans(),
    role=st.sampled_from(["ops", "finance"]),
    decision=st.sampled_from(["approve", "reject", "request_changes"]),
)
def test_a_decision_is_accepted_exactly_when_everything_about_it_applies(
    status, finished, known, right_hash, role, decision
):
    g = gate(status)
    if status in gates.DECIDED:
        g = gates.decided(gate(), decide("approve"), NOW).model_copy(update={"status": status})
    inp = decide(
        decision,
        gate_id="g" if known else "nope",
        contract_hash=HASH if right_hash else OTHER,
        actor=ALICE.model_copy(update={"role": role}),
    )
    problem = gates.refusal({"g": g}, inp, finished)
    applies = not finished and known and status == "pending" and right_hash and role == "ops"
    assert (problem is None) == applies, problem
    if problem is None:
        after = gates.decided(g, inp, NOW)
        assert after.status == gates.STATUS_OF[decision] and after.decision is not None
        # Once decided, every further decision on the gate is refused.
        assert gates.refusal({"g": after}, inp, finished) is not None


@settings(max_examples=200, deadline=None)
@given(
    deadline=st.one_of(st.none(), st.integers(1, 10_000)),
    reminder=st.one_of(st.none(), st.integers(1, 10_000)),
    reminders=st.integers(0, 20),
    escalated=st.booleans(),
    elapsed=st.integers(0, 50_000),
)
def test_the_next_timer_is_the_earliest_due_one_and_never_in_the_past(
    deadline, reminder, reminders, escalated, elapsed
):
    g = gate(deadline_s=deadline, reminder_interval_s=reminder).model_copy(
        update={"reminders": reminders, "escalated": escalated}
    )
    now = NOW + timedelta(seconds=elapsed)
    timer = gates.next_timer(g, now)
    due = {}
    if deadline and not escalated:
        due["deadline"] = NOW + timedelta(seconds=deadline) - now
    if reminder:
        due["reminder"] = NOW + timedelta(seconds=reminder * (reminders + 1)) - now
    if not due:
        assert timer is None
        return
    assert timer is not None
    kind, delay = timer
    assert delay >= timedelta(milliseconds=1)
    assert due[kind] == min(due.values())
    assert delay == max(min(due.values()), timedelta(milliseconds=1))
    # A gate that is not pending has no timer at all.
    assert gates.next_timer(g.model_copy(update={"status": "approved"}), now) is None


@st.composite
def gated_runs(draw):
    """A random DAG where some steps are gated, each gate in a random state."""
    nodes = draw(dags())
    gated = draw(st.sets(st.sampled_from([n.step_key for n in nodes])))
    nodes = [
        n.model_copy(update={"gate_id": f"g-{n.step_key}"}) if n.step_key in gated else n
        for n in nodes
    ]
    run_states: dict[str, StepState] = {}
    for n in nodes:  # consistent with the engine: only a step whose deps are done moved on
        ready = all(run_states[d].status == "done" for d in n.depends_on)
        choices = ["pending"]
        if ready:
            choices += ["done", "awaiting_approval"] if n.gate_id else ["done"]
        status = draw(st.sampled_from(choices))
        run_states[n.step_key] = StepState(step_key=n.step_key, status=status)
    gate_states = {}
    for key in sorted(gated):  # a gate is requested only once its step's dependencies are done
        deps_done = dag.deps_done(next(n for n in nodes if n.step_key == key), run_states)
        status = draw(st.sampled_from(STATUSES)) if deps_done else "dormant"
        g = gate(status, gate_id=f"g-{key}", gated_step_keys=[key])
        if status in gates.DECIDED:
            d = gates.decided(gate(), decide("approve", gate_id=f"g-{key}"), NOW).decision
            g = g.model_copy(update={"decision": d})
        gate_states[f"g-{key}"] = g
    return nodes, run_states, gate_states


@settings(max_examples=200, deadline=None)
@given(gated_runs())
def test_a_refused_gate_fails_exactly_its_waiting_steps_and_skips_exactly_their_dependents(run):
    nodes, states, gate_states = run
    changed = gates.settle(nodes, states, gate_states, NOW)
    failed = {
        n.step_key
        for n in nodes
        if n.gate_id
        and gate_states[n.gate_id].status in gates.FAILURE_OF
        and states[n.step_key].status in dag.WAITING
    }
    assert {k for k, s in changed.items() if s.status == "error"} == failed
    for k in failed:
        assert changed[k].error.failure_class == gates.FAILURE_OF[gate_states[f"g-{k}"].status]
    skipped = {k for k, s in changed.items() if s.status == "skipped"}
    for k in skipped:  # only waiting steps downstream of a failed one are skipped
        assert states[k].status in dag.WAITING and ancestors(nodes, k) & failed
    for n in nodes:  # every waiting step downstream of a failed one is skipped (or failed)
        if states[n.step_key].status in dag.WAITING and ancestors(nodes, n.step_key) & failed:
            assert n.step_key in skipped | failed
    after = {**states, **changed}
    assert gates.settle(nodes, after, gate_states, NOW) == {}  # settling twice changes nothing


# --- budget ------------------------------------------------------------------------------------

tokens = st.integers(0, 5_000)
usd = st.floats(0, 5, allow_nan=False, allow_infinity=False)
projections = st.builds(StepProjection, tokens=tokens, cost_usd=st.one_of(st.none(), usd))


@st.composite
def budgets(draw) -> BudgetState:
    limits = BudgetLimits(
        max_tokens=draw(st.one_of(st.none(), st.integers(1, 20_000))),
        max_cost_usd=draw(st.one_of(st.none(), st.floats(0.01, 20, allow_nan=False))),
    )
    spent = Usage(output_tokens=draw(tokens), cost_usd=draw(usd))
    return BudgetState(limits=limits, spent=spent)


@settings(max_examples=300, deadline=None)
@given(budgets(), projections, st.lists(projections, max_size=4))
def test_a_step_starts_exactly_when_its_projection_fits_beside_what_is_spent_and_reserved(
    state, projection, reserved
):
    refusal = budgetbook.start_refusal(state, "s", projection, reserved=reserved)
    lim, spent = state.limits, state.spent
    held_tokens = sum(p.tokens for p in reserved)
    held_cost = sum(p.cost_usd or 0.0 for p in reserved)
    fits = budgetbook.exhaustion(state) is None
    if lim.max_tokens is not None:
        fits &= spent.tokens + held_tokens + projection.tokens <= lim.max_tokens
    if lim.max_cost_usd is not None and projection.cost_usd is not None:
        fits &= round(spent.cost_usd + held_cost + projection.cost_usd, 9) <= lim.max_cost_usd
    assert (refusal is None) == fits, refusal


@settings(max_examples=200, deadline=None)
@given(budgets(), st.lists(projections, max_size=4))
def test_what_a_step_may_spend_never_exceeds_what_the_run_has_left(state, reserved):
    left, rest = budgetbook.left_for_step(state, reserved), budgetbook.remaining(state)
    if state.limits.max_tokens is None and state.limits.max_cost_usd is None:
        assert left is None and rest is None
        return
    assert left is not None and rest is not None
    if state.limits.max_tokens is not None:
        assert 1 <= left.max_tokens <= rest.max_tokens
    if state.limits.max_cost_usd is not None:
        assert 0 < left.max_cost_usd <= rest.max_cost_usd
    assert budgetbook.left_for_step(state) == rest  # nothing in flight: all that remains


@settings(max_examples=200, deadline=None)
@given(
    budgets(),
    st.integers(-5, 5_000),
    st.floats(-1, 5, allow_nan=False),
    st.booleans(),
    st.sampled_from(["", "  ", "more rows this month"]),
)
def test_an_accepted_extension_only_raises_the_caps_it_names_and_a_refused_one_changes_nothing(
    state, tokens_, cost, finished, reason
):
    ops = Actor(id="op", name="Op", role="ops", kind="human")
    inp = ExtendBudgetInput(tokens=tokens_, cost_usd=cost, actor=ops, reason=reason)
    refusal = budgetbook.extension_refusal(state, inp, finished)
    if refusal is not None:
        return  # the workflow records the refusal and never calls extended()
    assert not finished and reason.strip() and tokens_ >= 0 and cost >= 0
    ext = BudgetExtension(tokens=tokens_, cost_usd=cost, actor=ops, reason=reason, extended_at=NOW)
    after = budgetbook.extended(state, ext)
    before, now_ = state.limits, after.limits
    if before.max_tokens is None:
        assert now_.max_tokens is None
    else:
        assert now_.max_tokens == before.max_tokens + tokens_
    if before.max_cost_usd is None:
        assert now_.max_cost_usd is None
    else:
        assert now_.max_cost_usd >= before.max_cost_usd
    assert after.spent == state.spent and after.extensions[-1] == ext
    # Room only grows: whatever could start before can start after.
    probe = StepProjection(tokens=1, cost_usd=0.0)
    if budgetbook.start_refusal(state, "s", probe) is None:
        assert budgetbook.start_refusal(after, "s", probe) is None
