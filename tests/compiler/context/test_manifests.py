"""Stage 8: the CompiledContext carries the controls the Critic and the replay harness need."""

import hashlib
from typing import Any

import pytest
import rfc8785

from compiler.context import compile_context
from compiler.context.buckets import assemble_buckets
from compiler.context.budget import allocate_budget
from compiler.context.draft import Retrievers
from compiler.context.evidence import retrieve_evidence
from compiler.context.intent import classify_intent
from compiler.context.memory import recall_memory
from compiler.context.policy import resolve_policy
from compiler.context.tools import surface_tools
from schemas.context import STAGES, CompiledContext, ContextBody, ContextPack
from tests.compiler.context.build import (
    draft,
    memory,
    pack,
    pack_data,
    ref,
    request,
    rule,
    run_ctx,
)

BUNDLES = [
    {
        "bundle_id": "gov",
        "priority": 10,
        "rules": [
            rule("deny_prod", {"==": [{"var": "facts.env"}, "prod"]}, allow=False),
            rule(
                "needs_human", {"===": [{"var": "facts.side_effects"}, True]}, requires=["approval"]
            ),
            rule(
                "review", {"==": [{"var": "facts.effort"}, "ultra"]}, requires=["evaluator_review"]
            ),
            rule("no_http", {"!": [{"var": "facts.network"}]}, forbids=["http.request"]),
        ],
    }
]


def _compile(facts, safety="confirm", **pack_overrides):
    p = pack(policy_bundles=BUNDLES, **pack_overrides)
    return compile_context(p, run_ctx(facts=facts, safety_mode=safety), request())


def test_runtime_controls_from_decisions_and_tools():
    cc = _compile({"env": "prod", "side_effects": True, "effort": "ultra", "network": True})
    rc = cc.runtime_controls
    assert rc.must_refuse == ["deny_prod"]
    assert rc.must_escalate == ["needs_human"]
    assert rc.obligations == ["approval", "evaluator_review"]
    assert rc.approval_gates_active == ["http.request"]  # confirm mode; deploy.prod is human
    assert rc.redaction_rules_active == []
    assert [(m.rule_id, m.verdict) for m in cc.manifests.policy_manifest] == [
        ("deny_prod", "deny"),
        ("needs_human", "require"),
        ("review", "require"),
    ]
    assert "MUST REFUSE: deny_prod (gov): because deny_prod" in cc.system_prompt
    assert "REQUIRED (approval): needs_human (gov)" in cc.system_prompt


def test_quiet_run_has_empty_controls():
    rc = _compile({"network": True}, safety="notify").runtime_controls
    assert (rc.must_refuse, rc.must_escalate, rc.obligations, rc.approval_gates_active) == (
        [],
        [],
        [],
        [],
    )


def test_manifests_name_pack_intent_consumer_and_everything_withheld():
    cc = _compile({}, safety="notify")
    assert (cc.pack_version, cc.intent_id, cc.consumer) == (
        "test.pack@1.0.0",
        "forge.execute",
        "executor",
    )
    assert {(w.kind, w.id) for w in cc.manifests.withheld} == {
        ("tool", "http.request"),
        ("tool", "deploy.prod"),
    }


def reference_hash(value: Any) -> str:
    """The documented rule, written again without compiler/hashing.py: RFC 8785 by the
    `rfc8785` package, and sha256 of that."""
    return "sha256:" + hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def test_stage_hashes_cover_all_eight_stages_and_context_hash_covers_the_envelope():
    cc = _compile({"effort": "ultra"})
    assert list(cc.stage_hashes) == list(STAGES)
    assert all(h.startswith("sha256:") and len(h) == 71 for h in cc.stage_hashes.values())
    assert cc.context_hash == reference_hash(cc.model_dump(mode="json", exclude={"context_hash"}))
    assert cc.stage_hashes["manifests"] == reference_hash(
        cc.model_dump(mode="json", exclude={"context_hash", "stage_hashes"})
    )


def test_every_hash_recomputed_from_scratch_is_rfc8785():
    # what the encoder must get right: floats, non-ASCII and astral text in values and member
    # names (where RFC 8785's UTF-16 key order differs from code-point order), long text
    data = pack_data(policy_bundles=BUNDLES, redaction_rules=[r"\bsk-[a-z0-9]{8}\b"])
    data["tools"][1]["input_schema"] = {
        "type": "object",
        "properties": {
            "ratio": {"type": "number", "minimum": 0.5, "maximum": 1e21, "multipleOf": 0.01},
            "count": {"type": "integer", "maximum": 2**53 - 1, "default": 2.0},
            "n" * 70: {"type": "string", "description": "a long member name"},
            "é𝄞": {"type": "string", "description": "ü 𝄞 " * 20},
            "é\ufb33": {"type": "string"},  # after "é𝄞" in UTF-16 order, before by code point
        },
    }
    data["tools"][0]["description"] = "run code: é, ü, 𝄞"
    p = ContextPack.model_validate(data)
    c = run_ctx(facts={"effort": "ultra", "network": False})
    long_turn = "key sk-abcdefgh 𝄞 " + "naïve résumé, 𝄞 and 日本語 " * 10
    r = request(session=[{"kind": "user", "text": long_turn}, {"kind": "user", "text": "é 𝄞"}])
    refs = [
        ref(i, summary=f"naïve 𝄞 summary {i} " + "x" * 60 * (i % 2), priority=i) for i in range(5)
    ]
    recalls = [memory(1, text="ü")]

    cc = compile_context(p, c, r, evidence=lambda q: refs, memory=lambda q: recalls)

    retrievers = Retrievers(evidence=lambda q: refs, memory=lambda q: recalls)
    d = draft(p, c, r)
    d = classify_intent(d, retrievers=retrievers)
    d = resolve_policy(d, retrievers=retrievers)
    d = surface_tools(d, retrievers=retrievers)
    d = retrieve_evidence(d, retrievers=retrievers)
    d = recall_memory(d, retrievers=retrievers)
    d = allocate_budget(d, retrievers=retrievers)
    d = assemble_buckets(d, retrievers=retrievers)
    body = ContextBody.model_validate(cc.model_dump(include=set(ContextBody.model_fields)))
    outputs = [d.intent, d.policy, d.tools, d.evidence, d.memory, d.budget, d.buckets, body]
    expected = [reference_hash(out.model_dump(mode="json")) for out in outputs]
    assert cc.stage_hashes == dict(zip(STAGES, expected, strict=True))
    envelope = cc.model_dump(mode="json", exclude={"context_hash"})
    assert cc.context_hash == reference_hash(envelope)
    assert "key [REDACTED] 𝄞" in cc.task_prompt
    assert data["tools"][1]["input_schema"] in [t.input_schema for t in cc.surfaced_tools]


def test_an_integer_past_2_53_is_refused_with_what_to_do():
    data = pack_data()
    data["tools"][1]["input_schema"] = {"type": "integer", "maximum": 10**17}
    with pytest.raises(
        ValueError, match=r"integer 100000000000000000 .*send such integers as strings"
    ):
        compile_context(ContextPack.model_validate(data), run_ctx(), request())


def test_the_envelope_round_trips_through_json():
    cc = _compile({"effort": "ultra"})
    again = CompiledContext.model_validate_json(cc.model_dump_json())
    assert again == cc
    assert again.model_dump_json() == cc.model_dump_json()
