"""Stage 2: JsonLogic rules over the run's facts become typed decisions with stable ids."""

import pytest

from compiler.context import ContextError
from compiler.context.intent import classify_intent
from compiler.context.policy import decision_id, resolve_policy
from tests.compiler.context.build import draft, pack, request, rule, run_ctx, staged


def _resolve(bundles, facts=None, intent_id="forge.execute", **ctx):
    p = pack(policy_bundles=bundles)
    req = request(intent_id=intent_id)
    c = run_ctx(facts=facts or {}, **ctx)
    return staged(draft(p, c, req), classify_intent, resolve_policy).policy.decisions


EXECUTOR_RULES = [
    {
        "bundle_id": "egress",
        "priority": 10,
        "rules": [
            rule("no_net", {"!": [{"var": "facts.network"}]}, forbids=["http.request"]),
            rule(
                "ultra_review",
                {"==": [{"var": "facts.effort"}, "ultra"]},
                requires=["evaluator_review"],
            ),
            rule("deploy_denied", {"==": [{"var": "facts.step_kind"}, "deploy"]}, allow=False),
        ],
    }
]


def test_decisions_are_typed_with_rule_and_bundle_ids_verdicts_and_obligations():
    decisions = _resolve(
        EXECUTOR_RULES, {"network": False, "effort": "ultra", "step_kind": "deploy"}
    )
    assert [(d.rule_id, d.bundle_id, d.verdict) for d in decisions] == [
        ("no_net", "egress", "allow"),
        ("ultra_review", "egress", "require"),
        ("deploy_denied", "egress", "deny"),
    ]
    assert decisions[0].forbids == ["http.request"]
    assert decisions[1].requires == ["evaluator_review"]
    assert decisions[2].rationale == "because deploy_denied"


@pytest.mark.parametrize(
    ("facts", "fired"),
    [
        ({"network": True, "effort": "standard"}, []),
        ({"network": True, "effort": "ultra"}, ["ultra_review"]),
        ({"effort": "deep"}, ["no_net"]),  # no network fact: fails closed
        ({"network": False, "step_kind": "deploy"}, ["no_net", "deploy_denied"]),
    ],
)
def test_jsonlogic_rules_read_the_facts(facts, fired):
    assert [d.rule_id for d in _resolve(EXECUTOR_RULES, facts)] == fired


def test_rules_see_run_context_request_and_intent():
    bundles = [
        {
            "bundle_id": "b",
            "rules": [
                rule("tenant", {"==": [{"var": "run_context.tenant_id"}, "tenant-a"]}),
                rule("intent", {"==": [{"var": "intent.task_id"}, "step.execute"]}),
                rule("query", {"in": ["x", {"var": "request.context_query.tags"}]}),
                rule("safety", {"==": [{"var": "run_context.safety_mode"}, "auto"]}),
            ],
        }
    ]
    p = pack(policy_bundles=bundles)
    req = request(context_query={"tags": ["x", "y"]})
    c = run_ctx()
    resolved = staged(draft(p, c, req), classify_intent, resolve_policy).policy
    fired = [d.rule_id for d in resolved.decisions]
    assert fired == ["tenant", "intent", "query"]


def test_decision_ids_are_derived_from_bundle_and_rule_never_random():
    facts = {"network": False, "effort": "ultra", "step_kind": "deploy"}
    first, second = _resolve(EXECUTOR_RULES, facts), _resolve(EXECUTOR_RULES, facts)
    assert [d.policy_decision_id for d in first] == [d.policy_decision_id for d in second]
    assert first[0].policy_decision_id == decision_id("egress", "no_net")
    assert first[0].policy_decision_id.startswith("pol_")
    ids = {d.policy_decision_id for d in first}
    assert len(ids) == 3
    # the separator keeps ("ab", "c") and ("a", "bc") apart
    assert decision_id("ab", "c") != decision_id("a", "bc")


def test_bundles_run_by_priority_desc_ties_in_pack_order():
    always = {"==": [1, 1]}
    bundles = [
        {"bundle_id": "low", "priority": 1, "rules": [rule("l", always)]},
        {"bundle_id": "tie_a", "priority": 5, "rules": [rule("a1", always), rule("a2", always)]},
        {"bundle_id": "high", "priority": 9, "rules": [rule("h", always)]},
        {"bundle_id": "tie_b", "priority": 5, "rules": [rule("b", always)]},
    ]
    assert [d.rule_id for d in _resolve(bundles)] == ["h", "a1", "a2", "b", "l"]


def test_applies_to_intent_limits_a_rule_to_one_intent():
    always = {"==": [1, 1]}
    bundles = [
        {
            "bundle_id": "b",
            "rules": [
                {**rule("only_small", always), "applies_to_intent": "forge.execute.small"},
                rule("everyone", always),
            ],
        }
    ]
    assert [d.rule_id for d in _resolve(bundles)] == ["everyone"]
    small = _resolve(bundles, intent_id="forge.execute.small")
    assert [d.rule_id for d in small] == ["only_small", "everyone"]


def test_a_rule_that_fails_on_the_facts_names_rule_bundle_and_pack():
    bundles = [{"bundle_id": "math", "rules": [rule("ratio", {"/": [1, {"var": "facts.n"}]})]}]
    with pytest.raises(ContextError) as err:
        _resolve(bundles, {"n": 0})
    assert err.value.code == "CONTEXT_POLICY_RULE"
    assert "'ratio'" in str(err.value) and "'math'" in str(err.value)
    assert "test.pack@1.0.0" in str(err.value) and "division by zero" in str(err.value)
