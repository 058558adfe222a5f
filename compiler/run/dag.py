"""DAG decisions of a run, pure: what may start, what a failure skips, what a step reads.

The workflow holds the states and does the I/O; these functions only decide. They keep the
iteration order of their inputs (the plan's topological order, the states' insertion order), so
a workflow that calls them issues the same commands on every replay.
"""

from collections.abc import Iterable, Mapping, Sequence

from schemas.artifacts import ArtifactRef
from schemas.run import GateState, StepNode, StepState

__all__ = ["WAITING", "deps_done", "inputs_for", "ready", "skip_dependents"]

# Statuses of a step that has not started: it may still start, or be skipped.
WAITING = ("pending", "awaiting_approval")
_BLOCKING = ("error", "skipped")


def deps_done(node: StepNode, states: Mapping[str, StepState]) -> bool:
    """Whether every step `node` depends on is done."""
    return all(states[d].status == "done" for d in node.depends_on)


def ready(
    nodes: Sequence[StepNode], states: Mapping[str, StepState], gates: Mapping[str, GateState]
) -> list[StepNode]:
    """Steps whose dependencies are done and whose gate, if any, is approved, in plan order."""
    return [
        node
        for node in nodes
        if states[node.step_key].status in WAITING
        and deps_done(node, states)
        and (node.gate_id is None or gates[node.gate_id].status == "approved")
    ]


def skip_dependents(
    nodes: Sequence[StepNode], states: Mapping[str, StepState], failed: str
) -> dict[str, StepState]:
    """The new states of the pending steps that `failed` (now error or skipped) transitively blocks.

    Each skipped step names the upstream step that blocks it: `failed` when it is a direct
    dependency, else the first blocked dependency in its `depends_on`.
    """
    current = dict(states)
    skipped: dict[str, StepState] = {}
    changed = True
    while changed:
        changed = False
        for node in nodes:
            state = current[node.step_key]
            if state.status != "pending":
                continue
            blocked = [d for d in node.depends_on if current[d].status in _BLOCKING]
            if not blocked:
                continue
            root = failed if failed in blocked else blocked[0]
            how = "failed" if current[root].status == "error" else "was skipped"
            state = state.model_copy(
                update={"status": "skipped", "skipped_because": f"upstream step {root!r} {how}"}
            )
            current[node.step_key] = skipped[node.step_key] = state
            changed = True
    return skipped


def inputs_for(
    node: StepNode, run_inputs: Iterable[ArtifactRef], states: Mapping[str, StepState]
) -> dict[str, ArtifactRef]:
    """Every read path of the step, from the run's inputs or an upstream step's outputs.

    A later source wins for the same path: a step's output over a run input, and among steps
    the one later in `states`' order.
    """
    available = {ref.path: ref for ref in run_inputs}
    for state in states.values():
        for ref in state.outputs:
            available[ref.path] = ref
    return {p: available[p] for p in node.read_paths if p in available}
