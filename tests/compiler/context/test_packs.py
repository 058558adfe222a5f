"""Context packs: parse_pack's errors name file and field; the six stdlib packs load and compile."""

import pytest

from activities.models.context_packs import load_context_packs
from compiler.context import ContextError, compile_context, parse_pack
from schemas.context import InvokeRequest
from tests.compiler.context.build import pack_data, ref, rule, run_ctx

CONSUMERS = ["evaluator", "executor", "planner", "repair", "resolver", "skill_resolver"]
INTENTS = {
    "planner": "forge.plan",
    "resolver": "forge.resolve",
    "skill_resolver": "forge.skills",
    "executor": "forge.execute",
    "evaluator": "forge.evaluate",
    "repair": "forge.repair",
}


def _problems(data, source="ctx/executor.yaml"):
    with pytest.raises(ContextError) as err:
        parse_pack(data, source)
    assert err.value.code == "CONTEXT_PACK_INVALID"
    assert all(p.startswith(f"{source}: ") for p in err.value.problems)
    return err.value.problems


def test_a_valid_document_parses():
    assert parse_pack(pack_data(), "x.yaml").contract_name == "test.pack"


def test_schema_errors_name_file_and_field():
    data = pack_data()
    del data["contract_name"]
    data["tools"][0]["approval_mode"] = "sometimes"
    problems = _problems(data)
    assert any(p.startswith("ctx/executor.yaml: contract_name: ") for p in problems)
    assert any(p.startswith("ctx/executor.yaml: tools.0.approval_mode: ") for p in problems)
    assert _problems(["not", "a", "mapping"]) == [
        "ctx/executor.yaml: (document): a context pack is a mapping, got list"
    ]


def test_coherence_errors_are_all_reported_together():
    data = pack_data(
        policy_bundles=[
            {
                "bundle_id": "b",
                "rules": [
                    rule("r", {"==": [1, 1]}, forbids=["no.such.tool"]),
                    rule("r", {"teleport": [1]}, downgrade={"ghost": "auto"}),
                    {**rule("s", True), "applies_to_intent": "forge.nothing"},
                ],
            },
            {"bundle_id": "b", "rules": []},
        ],
        permissions=[{"tool_id": "missing.tool"}],
        budget={"splits": {"forge.execute": {"task": 0.7}, "forge.other": {"task": 1.0}}},
        redaction_rules=["(unclosed"],
    )
    data["intents"].append({**data["intents"][0]})
    data["intents"].append({**data["intents"][0], "intent_id": "forge.plan", "consumer": "planner"})
    data["tools"].append({**data["tools"][1]})
    text = "\n".join(_problems(data))
    for expected in [
        "intents: duplicate intent_id 'forge.execute'",
        "intents[3].consumer: 'planner' in a pack for 'executor'",
        "tools: duplicate tool_id 'log.note'",
        "permissions[0]: tool 'missing.tool' is not in the pack's tools",
        "policy_bundles: duplicate bundle_id 'b'",
        "policy_bundles[0] (b).rules: duplicate rule_id 'r'",
        "policy_bundles[0] (b).rules[0] (r).then: tool 'no.such.tool' is not in the pack's tools",
        "policy_bundles[0] (b).rules[1] (r).if: unknown JsonLogic operator 'teleport'",
        "policy_bundles[0] (b).rules[1] (r).then: tool 'ghost' is not in the pack's tools",
        "policy_bundles[0] (b).rules[2] (s).applies_to_intent: 'forge.nothing' is not one of",
        "budget.splits['forge.execute']: fractions sum to 0.7, not 1",
        "budget.splits: 'forge.other' is not one of the pack's intents",
        "redaction_rules[0]: '(unclosed' is not a valid regex",
    ]:
        assert expected in text, expected


def test_a_tool_schema_integer_no_hash_can_hold_is_a_pack_problem():
    data = pack_data()
    data["tools"][1]["input_schema"] = {"type": "integer", "maximum": 2**63 - 1, "minimum": -5}
    assert _problems(data) == [
        "ctx/executor.yaml: tools[1] (log.note).input_schema: integer 9223372036854775807 cannot "
        "be canonicalized: RFC 8785 JSON holds integers only up to 2**53 - 1 in magnitude (what "
        "an IEEE 754 double represents exactly); send such integers as strings"
    ]
    data["tools"][1]["input_schema"] = {"type": "integer", "maximum": 2**53 - 1}
    assert parse_pack(data, "x.yaml").tools[1].input_schema["maximum"] == 2**53 - 1


def test_the_six_stdlib_packs_load_keyed_by_consumer():
    packs = load_context_packs()
    assert sorted(packs) == CONSUMERS
    for consumer, p in packs.items():
        assert p.consumer == consumer
        assert p.intents[0].intent_id == INTENTS[consumer]
        assert p.policy_bundles and any(b.rules for b in p.policy_bundles)
        assert p.system_blocks and p.developer_blocks


FACTS = [
    {},
    {
        "effort": "ultra",
        "network": True,
        "egress_domains": ["api.example.com"],
        "side_effects": True,
    },
    {
        "effort": "deep",
        "network": False,
        "enforcement": "block",
        "review": True,
        "recipe_seeded": True,
        "repair": True,
        "ambiguous": True,
        "required_skills": ["x"],
        "attempt": 2,
        "max_retries": 2,
        "failure_class": "SCHEMA_MISMATCH",
    },
]


@pytest.mark.parametrize("consumer", CONSUMERS)
@pytest.mark.parametrize("facts", FACTS, ids=["no-facts", "ultra-network", "everything"])
def test_every_intent_of_every_stdlib_pack_compiles(consumer, facts):
    p = load_context_packs()[consumer]
    for row in p.intents:
        req = InvokeRequest(intent_id=row.intent_id, message="Objective: reconcile the ledger.")
        cc = compile_context(p, run_ctx(facts=facts), req, evidence=lambda q: [ref(1)])
        assert cc.consumer == consumer and cc.system_prompt.startswith("## System")
        assert "Objective: reconcile the ledger." in cc.task_prompt
        assert "kg:item:1" in cc.task_prompt
        assert not cc.budget_report.bucket_truncations


def test_answer_repair_offers_no_tools_step_repair_offers_run_python():
    p = load_context_packs()["repair"]
    ctx = run_ctx(facts={"phase": "repair", "attempt": 1})
    answer = compile_context(p, ctx, InvokeRequest(intent_id="forge.repair", message="m"))
    step = compile_context(p, ctx, InvokeRequest(intent_id="forge.repair.step", message="m"))
    assert answer.surfaced_tools == []
    assert [t.native_name for t in step.surfaced_tools] == ["run_python", None]


def test_executor_pack_carries_the_authority_hierarchy_and_egress_policy():
    p = load_context_packs()["executor"]
    req = InvokeRequest(intent_id="forge.execute", message="m")
    offline = compile_context(p, run_ctx(facts={"network": False}), req)
    hierarchy = [
        "Frozen io_contract — highest authority",
        "execution_contract — execution constraints",
        "compiled_step_contract_v1 — the full compiled specification",
        "artifact_contracts — schema requirements",
        "skill_bindings — which skills",
        "materialized_skill_packages — verified script paths",
        "system_guarantees — runtime invariants",
    ]
    positions = [offline.system_prompt.index(h) for h in hierarchy]
    assert positions == sorted(positions)
    assert "Fresh mind per step" in offline.system_prompt
    assert "forge_bridge.call(tool_id, args)" in offline.system_prompt
    assert [t.tool_id for t in offline.surfaced_tools] == [
        "sandbox.session",
        "artifact.evaluate",
        "log.note",
    ]
    online = compile_context(
        p,
        run_ctx(facts={"network": True, "egress_domains": ["a.example"]}, safety_mode="notify"),
        req,
    )
    assert {t.tool_id: t.approval_mode for t in online.surfaced_tools}["http.request"] == "notify"
    ultra = compile_context(p, run_ctx(facts={"effort": "ultra"}), req)
    assert ultra.runtime_controls.obligations == ["evaluator_review"]


def test_extra_dirs_override_by_consumer_and_errors_name_the_file(tmp_path):
    d = tmp_path / "pack" / "context"
    d.mkdir(parents=True)
    (d / "mine.yaml").write_text(
        "contract_name: custom.executor\ncontract_version: '2'\nconsumer: executor\n"
        "intents: [{intent_id: forge.execute, intent_class: c, task_id: t, consumer: executor}]\n"
    )
    packs = load_context_packs([tmp_path / "pack", tmp_path / "no-such-dir"])
    assert packs["executor"].contract_name == "custom.executor"
    assert packs["planner"].contract_name == "forge.context.planner"

    (d / "second.yaml").write_text((d / "mine.yaml").read_text())
    with pytest.raises(ContextError, match="second.yaml: consumer: 'executor' already has a pack"):
        load_context_packs([tmp_path / "pack"])

    (d / "second.yaml").write_text("consumer: [unclosed\n")
    with pytest.raises(ContextError, match=r"second.yaml: line 2, column 1: invalid YAML"):
        load_context_packs([tmp_path / "pack"])
