"""Same inputs give a byte-identical CompiledContext; a change shows in the stage it entered."""

import pytest

from compiler.context import compile_context
from schemas.context import STAGES
from tests.compiler.context.build import memory, pack, ref, request, rule, run_ctx

BUNDLES = [
    {
        "bundle_id": "b",
        "rules": [
            rule(
                "review", {"==": [{"var": "facts.effort"}, "ultra"]}, requires=["evaluator_review"]
            )
        ],
    }
]


def _inputs(**change):
    p = pack(policy_bundles=BUNDLES, redaction_rules=[r"\bsecret\b"], **change.get("pack", {}))
    c = run_ctx(**{"facts": {"effort": "ultra"}, **change.get("ctx", {})})
    r = request(session=[{"kind": "user", "text": "hello"}], **change.get("req", {}))
    refs = [ref(i, priority=i % 3) for i in range(20)]
    refs += change.get("refs", [])
    recalls = [memory(i) for i in range(3)] + change.get("recalls", [])
    return p, c, r, refs, recalls


def _compile(**change):
    p, c, r, refs, recalls = _inputs(**change)
    return compile_context(p, c, r, evidence=lambda q: list(refs), memory=lambda q: list(recalls))


def test_compiling_twice_is_byte_identical():
    first, second = _compile(), _compile()
    assert first.model_dump_json() == second.model_dump_json()
    assert first.stage_hashes == second.stage_hashes
    assert first.context_hash == second.context_hash


def test_replay_from_recorded_json_inputs_reproduces_the_hash():
    p, c, r, refs, recalls = _inputs()
    live = compile_context(p, c, r, evidence=lambda q: refs, memory=lambda q: recalls)
    # what a replay harness has: the inputs as recorded JSON
    p2 = type(p).model_validate_json(p.model_dump_json())
    c2 = type(c).model_validate_json(c.model_dump_json())
    r2 = type(r).model_validate_json(r.model_dump_json())
    refs2 = [type(x).model_validate_json(x.model_dump_json()) for x in refs]
    recalls2 = [type(x).model_validate_json(x.model_dump_json()) for x in recalls]
    replay = compile_context(p2, c2, r2, evidence=lambda q: refs2, memory=lambda q: recalls2)
    assert replay.model_dump_json() == live.model_dump_json()


# (change, first stage whose output changes): every later stage changes with it or not, but
# every earlier stage keeps its hash, and the context hash always moves.
CHANGES = [
    ({"req": {"intent_id": "forge.execute.small"}}, "intent"),
    ({"ctx": {"facts": {"effort": "deep"}}}, "policy"),
    ({"ctx": {"prohibitions": ["log.note"]}}, "tools"),
    ({"refs": [ref(99)]}, "evidence"),
    ({"recalls": [memory(99)]}, "memory"),
    ({"ctx": {"bucket_tokens": 4321}}, "budget"),
    ({"req": {"message": "Do another step."}}, "buckets"),
    ({"pack": {"contract_version": "1.0.1"}}, "manifests"),
]


@pytest.mark.parametrize(("change", "stage"), CHANGES, ids=[s for _, s in CHANGES])
def test_a_change_moves_its_stage_hash_and_the_context_hash_only_from_there_on(change, stage):
    base, changed = _compile(), _compile(**change)
    at = STAGES.index(stage)
    for earlier in STAGES[:at]:
        assert changed.stage_hashes[earlier] == base.stage_hashes[earlier], earlier
    assert changed.stage_hashes[stage] != base.stage_hashes[stage]
    assert changed.stage_hashes["manifests"] != base.stage_hashes["manifests"]
    assert changed.context_hash != base.context_hash


def test_retriever_order_is_respected_not_reshuffled():
    a = _compile(refs=[ref(100, priority=1), ref(101, priority=1)])
    b = _compile(refs=[ref(101, priority=1), ref(100, priority=1)])
    assert a.stage_hashes["evidence"] != b.stage_hashes["evidence"]
    assert [e.id for e in a.manifests.evidence_manifest][-2:] == ["kg:item:100", "kg:item:101"]
