"""Stage 8: the CompiledContext carries the controls the Critic and the replay harness need."""

from compiler.context import compile_context
from compiler.hashing import sha256_of
from schemas.context import STAGES, CompiledContext
from tests.compiler.context.build import pack, request, rule, run_ctx

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


def test_stage_hashes_cover_all_eight_stages_and_context_hash_covers_the_envelope():
    cc = _compile({"effort": "ultra"})
    assert list(cc.stage_hashes) == list(STAGES)
    assert all(h.startswith("sha256:") and len(h) == 71 for h in cc.stage_hashes.values())
    assert cc.context_hash == sha256_of(cc.model_dump(mode="json", exclude={"context_hash"}))
    assert cc.stage_hashes["manifests"] == sha256_of(
        cc.model_dump(mode="json", exclude={"context_hash", "stage_hashes"})
    )


def test_the_envelope_round_trips_through_json():
    cc = _compile({"effort": "ultra"})
    again = CompiledContext.model_validate_json(cc.model_dump_json())
    assert again == cc
    assert again.model_dump_json() == cc.model_dump_json()
