"""The 5-rank compatibility algorithm (compiler/typesystem/compat.py) with the real library."""

from __future__ import annotations

import itertools

import pytest

from compiler.errors import CompilerError
from compiler.typesystem.compat import Compatibility, Consumer, Producer, rank_binding
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import CompiledStep
from schemas.typesystem import PolicyProfile
from tests.compiler.conftest import compile_raw
from tests.compiler.plans import (
    ALLOW_NORMALIZERS,
    FAIL_CLOSED,
    GENERIC_ALLOWED,
    inp,
    output,
    plan,
    step,
)

TE = "billing.time_entry"
RC = "billing.rate_card"
TE_ROWS = "billing.table.json_rows.time_entries.v1"
TE_CSV = "billing.table.csv.time_entries.v1"


def rank(
    library: TypeLibrary,
    producer: tuple[str | None, str, str | None],
    consumer: tuple[str | None, tuple[str, ...]],
    policy: str = ALLOW_NORMALIZERS,
) -> Compatibility:
    return rank_binding(Producer(*producer), Consumer(*consumer), library.policies[policy], library)


# -- rank 1: exact --------------------------------------------------------------------------


def test_rank1_exact_when_producer_profile_is_the_canonical_one(library: TypeLibrary) -> None:
    assert library.canonical_profile(TE, "table.json_rows") == TE_ROWS
    c = rank(library, (TE, "table.json_rows", TE_ROWS), (TE, ("table.json_rows",)))
    assert (c.rank, c.ok, c.error, c.adapter) == (1, True, None, None)
    assert TE in c.reason and "table.json_rows" in c.reason


@pytest.mark.parametrize("policy", [ALLOW_NORMALIZERS, FAIL_CLOSED, GENERIC_ALLOWED])
def test_rank1_holds_under_every_policy(library: TypeLibrary, policy: str) -> None:
    c = rank(library, (TE, "table.json_rows", TE_ROWS), (TE, ("table.json_rows",)), policy)
    assert c.rank == 1


def test_rank1_without_a_canonical_profile_when_none_exists(library: TypeLibrary) -> None:
    # billing.contract has no canonical json_rows profile: None == None is still exact.
    assert library.canonical_profile("billing.contract", "table.json_rows") is None
    c = rank(
        library,
        ("billing.contract", "table.json_rows", None),
        ("billing.contract", ("table.json_rows",)),
    )
    assert c.rank == 1


def test_same_generic_entity_on_both_sides_is_a_deliberate_type(library: TypeLibrary) -> None:
    c = rank(
        library,
        ("generic.rows", "table.json_rows", None),
        ("generic.rows", ("table.json_rows",)),
        FAIL_CLOSED,
    )
    assert c.rank == 1


# -- rank 2: same entity, accepted (non-primary) kind ---------------------------------------


def test_rank2_accepted_non_primary_kind(library: TypeLibrary) -> None:
    c = rank(library, (TE, "table.csv", TE_CSV), (TE, ("table.json_rows", "table.csv")))
    assert (c.rank, c.error, c.adapter) == (2, None, None)
    assert "table.csv" in c.reason


def test_rank2_primary_kind_with_a_non_canonical_profile(library: TypeLibrary) -> None:
    c = rank(library, (TE, "table.json_rows", None), (TE, ("table.json_rows",)))
    assert c.rank == 2


def test_rank2_needs_no_adapter_so_fail_closed_allows_it(library: TypeLibrary) -> None:
    c = rank(
        library, (TE, "table.csv", TE_CSV), (TE, ("table.json_rows", "table.csv")), FAIL_CLOSED
    )
    assert c.rank == 2


# -- rank 3: same entity, adapter -----------------------------------------------------------


def test_rank3_adapter_csv_to_json_rows_under_allow_normalizers(library: TypeLibrary) -> None:
    c = rank(library, (TE, "table.csv", TE_CSV), (TE, ("table.json_rows",)))
    assert (c.rank, c.error) == (3, None)
    assert c.adapter is not None
    assert c.adapter.adapter_id == "adapt.table.csv-to-json_rows"
    assert (c.adapter.from_kind, c.adapter.to_kind) == ("table.csv", "table.json_rows")
    assert c.adapter.adapter_id in c.reason


def test_rank3_picks_the_adapter_in_consumer_preference_order(library: TypeLibrary) -> None:
    c = rank(
        library, ("billing.contract", "object.yaml", None), ("billing.contract", ("object.json",))
    )
    assert c.rank == 3 and c.adapter is not None
    assert c.adapter.adapter_id == "adapt.object.yaml-to-json"


def test_rank3_refused_under_fail_closed(library: TypeLibrary) -> None:
    policy: PolicyProfile = library.policies[FAIL_CLOSED]
    assert not policy.allow_adapters
    c = rank(library, (TE, "table.csv", TE_CSV), (TE, ("table.json_rows",)), FAIL_CLOSED)
    assert (c.rank, c.ok, c.error) == (5, False, "E_POLICY")
    assert c.adapter is not None and c.adapter.adapter_id == "adapt.table.csv-to-json_rows"
    assert FAIL_CLOSED in c.reason and "forbids" in c.reason


# -- rank 4: generic, only under generic.inference-allowed.v1 -------------------------------


@pytest.mark.parametrize(
    ("p_ent", "c_ent"),
    [(None, TE), (TE, None), ("generic.rows", TE), (TE, "generic.rows"), (None, None)],
)
def test_rank4_generic_only_under_inference_allowed(
    library: TypeLibrary, p_ent: str | None, c_ent: str | None
) -> None:
    allowed = rank(
        library, (p_ent, "table.json_rows", None), (c_ent, ("table.json_rows",)), GENERIC_ALLOWED
    )
    assert (allowed.rank, allowed.error, allowed.adapter) == (4, None, None)
    assert GENERIC_ALLOWED in allowed.reason
    for strict in (ALLOW_NORMALIZERS, FAIL_CLOSED):
        refused = rank(
            library, (p_ent, "table.json_rows", None), (c_ent, ("table.json_rows",)), strict
        )
        assert (refused.rank, refused.error) == (5, "E_POLICY")
        assert strict in refused.reason


def test_rank4_generic_with_an_adapter(library: TypeLibrary) -> None:
    c = rank(library, (None, "table.csv", None), (TE, ("table.json_rows",)), GENERIC_ALLOWED)
    assert c.rank == 4 and c.adapter is not None
    assert c.adapter.adapter_id == "adapt.table.csv-to-json_rows"


def test_generic_binding_without_kind_path_is_incompatible(library: TypeLibrary) -> None:
    c = rank(library, (None, "report.pdf", None), (TE, ("table.json_rows",)), GENERIC_ALLOWED)
    assert (c.rank, c.error) == (5, "E_INCOMPATIBLE_BINDING")
    assert "report.pdf" in c.reason


# -- rank 5: incompatible ---------------------------------------------------------------------


@pytest.mark.parametrize("policy", [ALLOW_NORMALIZERS, FAIL_CLOSED, GENERIC_ALLOWED])
def test_rank5_different_entities(library: TypeLibrary, policy: str) -> None:
    c = rank(library, (TE, "table.json_rows", TE_ROWS), (RC, ("table.json_rows",)), policy)
    assert (c.rank, c.ok, c.error, c.adapter) == (5, False, "E_INCOMPATIBLE_BINDING", None)
    assert TE in c.reason and RC in c.reason


@pytest.mark.parametrize("policy", [ALLOW_NORMALIZERS, GENERIC_ALLOWED])
def test_rank5_same_entity_no_adapter(library: TypeLibrary, policy: str) -> None:
    assert library.adapter_between("table.json_rows", ["table.parquet"]) is None
    c = rank(library, (TE, "table.json_rows", TE_ROWS), (TE, ("table.parquet",)), policy)
    assert (c.rank, c.error, c.adapter) == (5, "E_INCOMPATIBLE_BINDING", None)
    assert "table.parquet" in c.reason and "no adapter" in c.reason


# -- invariants over a sweep ----------------------------------------------------------------

_ENTITIES = [None, "generic.rows", TE, RC]
_KINDS = ["table.json_rows", "table.csv", "table.parquet", "object.yaml", "object.json"]
_ACCEPTED = [
    ("table.json_rows",),
    ("table.json_rows", "table.csv"),
    ("object.json",),
    ("table.csv",),
]


def test_rank_invariants_over_a_sweep(library: TypeLibrary) -> None:
    for p_ent, c_ent, kind, accepted, pol_id in itertools.product(
        _ENTITIES, _ENTITIES, _KINDS, _ACCEPTED, sorted(library.policies)
    ):
        policy = library.policies[pol_id]
        profile = library.canonical_profile(p_ent, kind)
        c = rank_binding(Producer(p_ent, kind, profile), Consumer(c_ent, accepted), policy, library)
        where = (p_ent, c_ent, kind, accepted, pol_id, c)
        assert c.ok == (c.rank < 5) == (c.error is None), where
        assert c.reason, where
        if c.rank in (1, 2):
            assert kind in accepted and c.adapter is None, where
        if c.rank == 1:
            assert kind == accepted[0], where
        if c.rank == 3:
            assert p_ent == c_ent and policy.allow_adapters, where
            assert c.adapter is not None and c.adapter.from_kind == kind, where
            assert c.adapter.to_kind in accepted, where
        if c.rank == 4:
            assert policy.allow_generic_inference, where
            assert p_ent != c_ent or p_ent is None, where
        if c.error == "E_POLICY":
            assert not (policy.allow_adapters and policy.allow_generic_inference), where
        # The ranking itself never depends on the policy; the policy only refuses.
        loose = rank_binding(
            Producer(p_ent, kind, profile),
            Consumer(c_ent, accepted),
            library.policies[GENERIC_ALLOWED],
            library,
        )
        if c.ok:
            assert loose.rank == c.rank, where


# -- the ranks as the compiler records them in bindings -------------------------------------


def _consume(accepted: tuple[str, ...], policy: str, *, entity: str | None = TE) -> dict:
    return plan(
        step(
            "load",
            out="output/load.csv",
            abstract_outputs=[output("normalized_rows", TE, "table.csv")],
        ),
        step(
            "use",
            depends_on=["load"],
            policy_profile_id=policy,
            abstract_inputs=[inp("normalized_rows", entity, *accepted)],
        ),
    )


def test_compiled_rank3_inserts_a_visible_adapter_step() -> None:
    compiled = compile_raw(_consume(("table.json_rows",), ALLOW_NORMALIZERS))
    keys = [s.step_key for s in compiled.steps]
    assert keys[0] == "load" and keys[2] == "use" and keys[1].startswith("adapt-load-")
    adapter, use = compiled.steps[1], compiled.steps[2]
    assert adapter.inserted_by_compiler and adapter.kind == "adapter"
    assert adapter.adapter_id == "adapt.table.csv-to-json_rows"
    assert adapter.depends_on == ["load"]
    assert adapter.executable_contract_v2.code_sha256 is not None
    assert adapter.step_key in use.depends_on
    [b] = use.bindings
    assert (b.rank, b.rank_name, b.adapter_id) == (3, "same_entity_adapter", adapter.adapter_id)
    assert b.adapter_step_key == adapter.step_key and b.kind_key == "table.json_rows"
    assert b.path == adapter.expected_outputs[0].path == b.source.path
    assert b.path in use.executable_contract_v2.read_paths


def test_compiled_rank2_binds_without_adapter() -> None:
    compiled = compile_raw(_consume(("table.json_rows", "table.csv"), FAIL_CLOSED))
    assert [s.step_key for s in compiled.steps] == ["load", "use"]
    [b] = compiled.steps[1].bindings
    assert (b.rank, b.rank_name) == (2, "same_entity_acceptable_kind")
    assert (b.path, b.kind_key, b.adapter_id) == ("output/load.csv", "table.csv", None)


def test_compiled_rank1_exact() -> None:
    compiled = compile_raw(_consume(("table.csv",), FAIL_CLOSED))
    [b] = compiled.steps[1].bindings
    assert (b.rank, b.rank_name, b.profile_id) == (1, "exact", TE_CSV)


def test_compiled_rank4_generic_under_inference_allowed() -> None:
    compiled = compile_raw(_consume(("table.csv",), GENERIC_ALLOWED, entity=None))
    [b] = compiled.steps[-1].bindings
    assert (b.rank, b.rank_name) == (4, "generic_compatible")
    assert b.entity_schema_id == TE  # inherited from the producer


def test_shared_adapter_step_for_two_consumers_of_one_output() -> None:
    raw = _consume(("table.json_rows",), ALLOW_NORMALIZERS)
    raw["steps"].append(
        step(
            "use2",
            depends_on=["load"],
            abstract_inputs=[inp("normalized_rows", TE, "table.json_rows")],
        )
    )
    compiled = compile_raw(raw)
    adapters = [s for s in compiled.steps if s.inserted_by_compiler]
    assert len(adapters) == 1
    for key in ("use", "use2"):
        [s] = [s for s in compiled.steps if s.step_key == key]
        assert s.bindings[0].adapter_step_key == adapters[0].step_key


def test_two_outputs_in_one_slot_get_separate_adapters() -> None:
    raw = plan(
        step(
            "p",
            expected_outputs=[{"path": "output/te.json"}, {"path": "output/rc.json"}],
            abstract_outputs=[
                output("normalized_rows", TE, "table.json_rows", path="output/te.json"),
                output("normalized_rows", RC, "table.json_rows", path="output/rc.json"),
            ],
        ),
        step(
            "c",
            depends_on=["p"],
            abstract_inputs=[
                inp("normalized_rows", TE, "table.csv", path="output/te.json"),
                inp("normalized_rows", RC, "table.csv", path="output/rc.json"),
            ],
        ),
    )
    compiled = compile_raw(raw)
    c = next(s for s in compiled.steps if s.step_key == "c")
    te, rc = c.bindings
    assert te.path != rc.path, "both inputs read the same adapted file"
    adapters = {s.step_key: s for s in compiled.steps if s.inserted_by_compiler}
    assert adapters[rc.adapter_step_key].input_file_paths == ["output/rc.json"]


def test_adapted_binding_profile_matches_its_kind(library: TypeLibrary) -> None:
    raw = plan(
        step(
            "a",
            abstract_inputs=[
                inp("raw_files", TE, "table.json_rows", path="input/time_entries.csv")
            ],
        ),
        run_inputs=[
            {
                "name": "time_entries",
                "path": "input/time_entries.csv",
                "entity_schema_id": TE,
                "kind_key": "table.csv",
            }
        ],
    )
    compiled = compile_raw(raw)
    [b] = next(s for s in compiled.steps if s.step_key == "a").bindings
    assert b.rank == 3 and b.kind_key == "table.json_rows"
    assert b.profile_id is None or library.profiles[b.profile_id].kind_key == b.kind_key


_TE_RUN_INPUT = {
    "name": "time_entries",
    "path": "input/time_entries.csv",
    "entity_schema_id": TE,
    "kind_key": "table.csv",
}


def _needs_adapter() -> dict:
    return step(
        "a",
        abstract_inputs=[inp("raw_files", TE, "table.json_rows", path="input/time_entries.csv")],
    )


def _inserted_adapter() -> CompiledStep:
    compiled = compile_raw(plan(_needs_adapter(), run_inputs=[_TE_RUN_INPUT]))
    [adapter] = [s for s in compiled.steps if s.inserted_by_compiler]
    return adapter


def _rejected_or_unique(raw: dict) -> None:
    """Either the compiler refuses the plan, or every step key and written path is unique."""
    try:
        compiled = compile_raw(raw)
    except CompilerError:
        return
    keys = [s.step_key for s in compiled.steps]
    assert len(keys) == len(set(keys)), f"duplicate step keys in the compiled plan: {keys}"
    writes = [p for s in compiled.steps for p in s.executable_contract_v2.write_paths]
    assert len(writes) == len(set(writes)), f"two writers of one path: {writes}"


def test_inserted_adapter_key_cannot_collide_with_a_plan_step() -> None:
    """Regression: a plan step named like the adapter the compiler would insert."""
    adapter = _inserted_adapter()
    raw = plan(
        _needs_adapter(), step(adapter.step_key, out="output/z.json"), run_inputs=[_TE_RUN_INPUT]
    )
    _rejected_or_unique(raw)


def test_inserted_adapter_path_cannot_collide_with_a_plan_output() -> None:
    [adapter_path] = _inserted_adapter().executable_contract_v2.write_paths
    raw = plan(_needs_adapter(), step("z", out=adapter_path), run_inputs=[_TE_RUN_INPUT])
    _rejected_or_unique(raw)
