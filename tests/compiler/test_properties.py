"""Hypothesis properties of the compiler: hashing, determinism, DAG handling, cycles."""

from __future__ import annotations

import json
import random
import re
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from compiler.errors import CompilerError
from schemas.compiled import CompiledPlan
from tests.compiler.conftest import compile_raw, make_ctx
from tests.compiler.plans import ALLOW_NORMALIZERS, GENERIC_ALLOWED, inp, output, plan, step

HASH = re.compile(r"^sha256:[0-9a-f]{64}$")
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

# (slot, entity, kind) flavours whose producers and consumers bind at rank 1.
FLAVOURS = [
    ("findings", "generic.rows", "table.json_rows"),
    ("normalized_rows", "billing.time_entry", "table.json_rows"),
    ("findings", "billing.discrepancy_row", "table.json_rows"),
    ("scores", "generic.rows", "table.json_rows"),
    ("aggregated_rows", "billing.exception_summary", "dataset.aggregated_rows"),
]


def key(i: int) -> str:
    return f"s{i}"


def dag_step(
    i: int, deps: list[int], flavour: tuple[str, str, str], policy: str, code: str | None
) -> dict[str, Any]:
    slot, entity, kind = flavour
    fields: dict[str, Any] = {}
    if code is not None:
        fields["code"] = code
    return step(
        key(i),
        depends_on=[key(d) for d in deps],
        abstract_inputs=[inp(slot, entity, kind, from_step=key(d)) for d in deps],
        abstract_outputs=[output(slot, entity, kind)],
        policy_profile_id=policy,
        **fields,
    )


@st.composite
def dags(draw: st.DrawFn, max_steps: int = 30, policy: str = ALLOW_NORMALIZERS) -> dict[str, Any]:
    """A random acyclic plan: edges only to earlier steps, listed in a random order."""
    n = draw(st.integers(1, max_steps))
    flavour = draw(st.sampled_from(FLAVOURS))
    deps = [
        sorted(draw(st.sets(st.integers(0, i - 1), max_size=min(i, 3)))) if i else []
        for i in range(n)
    ]
    codes = [draw(st.none() | st.sampled_from(["print(1)", "x = 2"])) for _ in range(n)]
    steps = [dag_step(i, deps[i], flavour, policy, codes[i]) for i in range(n)]
    order = draw(st.permutations(range(n)))
    return plan(*(steps[i] for i in order))


def hashes(compiled: CompiledPlan) -> dict[str, str]:
    return {s.step_key: s.contract_hash for s in compiled.steps}


def deps_of(raw: dict[str, Any]) -> dict[str, list[str]]:
    return {s["step_key"]: list(s.get("depends_on", [])) for s in raw["steps"]}


def descendants(raw: dict[str, Any], root: str) -> set[str]:
    deps = deps_of(raw)
    found = {root}
    changed = True
    while changed:
        changed = False
        for k, ds in deps.items():
            if k not in found and found.intersection(ds):
                found.add(k)
                changed = True
    return found


def shuffle_keys(value: Any, rnd: random.Random) -> Any:
    """The same JSON value with every object's keys in a random order."""
    if isinstance(value, dict):
        items = [(k, shuffle_keys(v, rnd)) for k, v in value.items()]
        rnd.shuffle(items)
        return dict(items)
    if isinstance(value, list):
        return [shuffle_keys(v, rnd) for v in value]
    return value


# -- hashing is over meaning, not bytes -----------------------------------------------------


@SETTINGS
@given(
    raw=dags(max_steps=12),
    rnd=st.randoms(use_true_random=False),
    sort_keys=st.booleans(),
    indent=st.sampled_from([None, 0, 1, 2, 4, "\t"]),
    compact=st.booleans(),
)
def test_hashes_ignore_key_order_and_whitespace(
    raw: dict[str, Any], rnd: random.Random, sort_keys: bool, indent: Any, compact: bool
) -> None:
    before = compile_raw(raw)
    separators = (",", ":") if compact else None
    text = json.dumps(
        shuffle_keys(raw, rnd), sort_keys=sort_keys, indent=indent, separators=separators
    )
    after = compile_raw(json.loads(text))
    assert hashes(after) == hashes(before)
    assert after.plan_hash == before.plan_hash
    assert after.library_snapshot_hash == before.library_snapshot_hash


@SETTINGS
@given(raw=dags(max_steps=12), data=st.data())
def test_contract_hashes_ignore_the_order_steps_are_listed_in(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    shuffled = dict(raw, steps=data.draw(st.permutations(raw["steps"])))
    assert hashes(compile_raw(shuffled)) == hashes(compile_raw(raw))


MUTATIONS = ["objective", "label", "success_criteria", "path", "entity", "edge", "code"]


def mutate(raw: dict[str, Any], target: str, what: str, earlier: list[str]) -> dict[str, Any]:
    """A copy of `raw` with one semantic field of step `target` changed."""
    new = json.loads(json.dumps(raw))
    s = next(s for s in new["steps"] if s["step_key"] == target)
    if what in ("objective", "label", "success_criteria"):
        s[what] = s[what] + " (revised)"
    elif what == "path":
        s["expected_outputs"][0]["path"] = f"output/{target}_v2.json"
    elif what == "entity":
        ao = s["abstract_outputs"][0]
        ao["entity_schema_id"] = (
            "generic.object" if ao["entity_schema_id"] != "generic.object" else "generic.rows"
        )
    elif what == "edge":
        extra = [k for k in earlier if k not in s["depends_on"]]
        s["depends_on"].append(extra[0])
    elif what == "code":
        s["code"] = (s.get("code") or "") + "\nprint('changed')"
    return new


@SETTINGS
@given(raw=dags(max_steps=10, policy=GENERIC_ALLOWED), data=st.data())
def test_a_semantic_change_changes_that_steps_hash(
    raw: dict[str, Any], data: st.DataObject
) -> None:
    n = len(raw["steps"])
    i = data.draw(st.integers(0, n - 1), label="step")
    what = data.draw(st.sampled_from(MUTATIONS), label="mutation")
    target = key(i)
    # Only a step before `target` can become a dependency without a cycle.
    earlier = [key(j) for j in range(i) if key(j) not in deps_of(raw)[target]]
    if what == "edge":
        assume(earlier)
    before = compile_raw(raw)
    changed = mutate(raw, target, what, earlier)
    after = compile_raw(changed)
    old, new = hashes(before), hashes(after)
    assert set(old) == set(new)
    assert new[target] != old[target], what
    assert after.plan_hash != before.plan_hash
    # A step that neither is nor (transitively) depends on the target cannot see the change.
    affected = descendants(changed, target) | descendants(raw, target)
    for k in set(old) - affected:
        assert new[k] == old[k], (what, target, k)


@pytest.mark.parametrize("what", MUTATIONS)
def test_each_mutation_kind_changes_the_hash(what: str) -> None:
    """The hypothesis test above, pinned for every mutation so none is silently skipped."""
    raw = plan(
        *(dag_step(i, [i - 1] if i else [], FLAVOURS[0], GENERIC_ALLOWED, None) for i in range(3))
    )
    before = hashes(compile_raw(raw))
    after = hashes(compile_raw(mutate(raw, "s2", what, ["s0"])))
    assert after["s2"] != before["s2"]
    assert after["s0"] == before["s0"]


# -- random acyclic plans compile -----------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=dags())
def test_random_acyclic_plans_compile(raw: dict[str, Any]) -> None:
    compiled = compile_raw(raw)
    deps = deps_of(raw)
    keys = [s.step_key for s in compiled.steps]
    assert sorted(keys) == sorted(deps)
    position = {k: n for n, k in enumerate(keys)}
    for k, ds in deps.items():
        assert all(position[d] < position[k] for d in ds), (k, ds, keys)
    assert [s.step_id for s in compiled.steps] == [f"step_{n}" for n in range(1, len(keys) + 1)]
    contract_hashes = [s.contract_hash for s in compiled.steps]
    assert len(set(contract_hashes)) == len(contract_hashes)
    assert all(HASH.match(h) for h in contract_hashes)
    assert HASH.match(compiled.plan_hash)
    assert [p.step_key for p in compiled.dispatch_packets] == keys
    for s in compiled.steps:
        assert not s.inserted_by_compiler
        assert [b.source.step_key for b in s.bindings] == s.depends_on
        assert all(b.rank == 1 for b in s.bindings)
        assert s.backend == ("sandbox.frozen" if s.code else "sandbox.session")


# -- random cyclic plans are rejected with a real cycle -------------------------------------


@st.composite
def cyclic(draw: st.DrawFn) -> dict[str, Any]:
    """A DAG plus one back edge lo -> hi where hi already (directly) depends on lo."""
    raw = draw(dags(max_steps=20))
    n = len(raw["steps"])
    hi = draw(st.integers(0, n - 1))
    lo = draw(st.integers(0, hi))
    by_key = {s["step_key"]: s for s in raw["steps"]}
    if lo != hi and key(lo) not in by_key[key(hi)]["depends_on"]:
        by_key[key(hi)]["depends_on"].append(key(lo))
    by_key[key(lo)]["depends_on"].append(key(hi))
    return raw


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=cyclic())
def test_random_cyclic_plans_report_a_closed_path_of_real_edges(raw: dict[str, Any]) -> None:
    with pytest.raises(CompilerError) as info:
        compile_raw(raw)
    cycles = [d for d in info.value.diagnostics if d.code == "E_CYCLE"]
    assert cycles
    deps = deps_of(raw)
    for d in cycles:
        path = d.message.split(": ", 1)[1].split(" -> ")
        assert len(path) >= 2 and path[0] == path[-1], d.message
        assert d.step_key == path[0]
        for u, v in zip(path, path[1:], strict=False):
            assert v in deps[u], (d.message, u, v)
        assert len(set(path[:-1])) == len(path) - 1, "a simple cycle visits no step twice"


# -- determinism --------------------------------------------------------------------------


@SETTINGS
@given(raw=dags(max_steps=15))
def test_compiling_twice_is_byte_identical(raw: dict[str, Any]) -> None:
    first = compile_raw(raw).model_dump_json()
    second = compile_raw(json.loads(json.dumps(raw)), ctx=make_ctx()).model_dump_json()
    assert first == second


def test_billing_example_compiles_deterministically() -> None:
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "billing-audit" / "plan.json"
    raw = json.loads(path.read_text(encoding="utf-8"))
    assert compile_raw(raw).model_dump_json() == compile_raw(raw).model_dump_json()
