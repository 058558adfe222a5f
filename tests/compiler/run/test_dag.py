"""The run's DAG decisions, without Temporal: properties over random DAGs and worked cases."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.run import dag
from schemas.artifacts import ArtifactRef
from schemas.compiled import GateSpec
from schemas.run import GateState, StepNode, StepState


def node(key: str, deps: list[str], reads: list[str] = (), gate: str | None = None) -> StepNode:
    return StepNode(
        step_key=key,
        step_id=f"id-{key}",
        depends_on=deps,
        contract_hash="sha256:" + "0" * 64,
        kind="code",
        backend="sandbox.frozen",
        read_paths=list(reads),
        write_paths=[f"output/{key}.json"],
        max_attempts=1,
        timeout_s=60,
        gate_id=gate,
    )


def ref(path: str, tag: str) -> ArtifactRef:
    return ArtifactRef(artifact_id=f"sha256:{tag}", path=path, sha256=tag, size_bytes=1)


@st.composite
def dags(draw) -> list[StepNode]:
    """Acyclic plans in topological order: each step depends on some earlier ones."""
    n = draw(st.integers(1, 12))
    nodes = []
    for i in range(n):
        earlier = [f"s{j}" for j in range(i)]
        deps = draw(st.lists(st.sampled_from(earlier), unique=True, max_size=3)) if earlier else []
        nodes.append(node(f"s{i}", deps))
    return nodes


def ancestors(nodes: list[StepNode], key: str) -> set[str]:
    by_key = {n.step_key: n for n in nodes}
    seen: set[str] = set()
    todo = list(by_key[key].depends_on)
    while todo:
        k = todo.pop()
        if k not in seen:
            seen.add(k)
            todo += by_key[k].depends_on
    return seen


def simulate(nodes: list[StepNode], failing: set[str], seed: int) -> dict[str, str]:
    """Run the DAG to the end, finishing started steps in a seeded random order."""
    rng = random.Random(seed)
    states = {n.step_key: StepState(step_key=n.step_key) for n in nodes}
    running: list[str] = []
    while True:
        for n in dag.ready(nodes, states, {}):
            # No step starts before every step it depends on is done.
            assert all(states[d].status == "done" for d in n.depends_on)
            states[n.step_key] = states[n.step_key].model_copy(update={"status": "running"})
            running.append(n.step_key)
        if not running:
            break
        key = running.pop(rng.randrange(len(running)))
        if key in failing:
            states[key] = states[key].model_copy(update={"status": "error"})
            states.update(dag.skip_dependents(nodes, states, key))
        else:
            states[key] = states[key].model_copy(update={"status": "done"})
    return {k: s.status for k, s in states.items()}


@settings(max_examples=300)
@given(nodes=dags(), data=st.data())
def test_a_failure_skips_exactly_its_dependents_whatever_the_completion_order(nodes, data):
    keys = [n.step_key for n in nodes]
    failing = set(data.draw(st.lists(st.sampled_from(keys), unique=True, max_size=3)))
    first = simulate(nodes, failing, seed=1)
    for key in keys:
        blocked = ancestors(nodes, key) & failing
        if blocked:
            assert first[key] == "skipped", (key, blocked)
        else:
            assert first[key] == ("error" if key in failing else "done")
    # The outcome is the same for any order in which running steps finish.
    for seed in (2, 3, 4):
        assert simulate(nodes, failing, seed=seed) == first


def test_skipped_steps_name_the_step_that_blocks_them():
    nodes = [
        node("a", []),
        node("b", ["a"]),
        node("c", ["b", "a"]),
        node("d", ["x"]),
        node("x", []),
    ]
    states = {n.step_key: StepState(step_key=n.step_key) for n in nodes}
    states["a"] = states["a"].model_copy(update={"status": "error"})
    skipped = dag.skip_dependents(nodes, states, "a")
    assert {k: s.skipped_because for k, s in skipped.items()} == {
        "b": "upstream step 'a' failed",
        "c": "upstream step 'a' failed",  # a direct dependency on the failed step names it
    }
    assert states["b"].status == "pending"  # the input mapping is not changed


def test_a_transitively_blocked_step_names_its_skipped_dependency():
    nodes = [node("a", []), node("b", ["a"]), node("c", ["b"])]
    states = {n.step_key: StepState(step_key=n.step_key) for n in nodes}
    states["a"] = states["a"].model_copy(update={"status": "error"})
    skipped = dag.skip_dependents(nodes, states, "a")
    assert skipped["c"].skipped_because == "upstream step 'b' was skipped"


def _gate(status: str) -> GateState:
    spec = GateSpec(
        gate_id="g",
        gated_step_keys=["b"],
        contract_hash="sha256:" + "0" * 64,
        approver_role="ops",
        prompt="ok?",
        evidence=[],
        dedupe_key="g",
        reason="a person approves",
    )
    return GateState(spec=spec, status=status, approver_role="ops")


def test_a_gated_step_is_ready_only_once_its_gate_is_approved():
    nodes = [node("a", []), node("b", ["a"], gate="g")]
    states = {n.step_key: StepState(step_key=n.step_key) for n in nodes}
    states["a"] = states["a"].model_copy(update={"status": "done"})
    for status in ("dormant", "pending", "rejected"):
        assert dag.ready(nodes, states, {"g": _gate(status)}) == []
    assert dag.ready(nodes, states, {"g": _gate("approved")}) == [nodes[1]]
    waiting = {**states, "b": states["b"].model_copy(update={"status": "awaiting_approval"})}
    assert dag.ready(nodes, waiting, {"g": _gate("approved")}) == [nodes[1]]


def test_inputs_come_from_run_inputs_and_upstream_outputs_later_ones_winning():
    n = node("c", ["a", "b"], reads=["input/x.csv", "output/a.json", "output/b.json", "gone"])
    states = {
        "a": StepState(step_key="a", status="done", outputs=[ref("output/a.json", "a1")]),
        "b": StepState(
            step_key="b",
            status="done",
            outputs=[ref("output/b.json", "b1"), ref("input/x.csv", "b-overrides")],
        ),
    }
    inputs = dag.inputs_for(n, [ref("input/x.csv", "run")], states)
    assert {p: r.sha256 for p, r in inputs.items()} == {
        "input/x.csv": "b-overrides",
        "output/a.json": "a1",
        "output/b.json": "b1",
    }
