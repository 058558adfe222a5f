"""Stage 5: promoted memory only, filtered by tenant, subject, intent and classification, capped."""

from compiler.context import compile_context
from compiler.context.draft import Retrievers
from compiler.context.intent import classify_intent
from compiler.context.memory import recall_memory
from tests.compiler.context.build import draft, memory, pack, request, run_ctx, staged


def _recall(recalls, p=None, **ctx):
    p = p or pack()
    c, r = run_ctx(**ctx), request()
    seen = []

    def recaller(query):
        seen.append(query)
        return recalls

    retrievers = Retrievers(memory=recaller)
    d = staged(draft(p, c, r), classify_intent, recall_memory, retrievers=retrievers)
    return d.memory, seen


def test_capped_at_max_per_intent_in_recall_order():
    out, _ = _recall([memory(i) for i in range(12)])
    assert [m.id for m in out.recalls] == [f"mem-{i}" for i in range(8)]  # the default cap
    assert [w.id for w in out.withheld] == [f"mem-{i}" for i in range(8, 12)]
    assert all(w.reason == "over the pack's max_per_intent of 8" for w in out.withheld)
    capped, _ = _recall([memory(i) for i in range(5)], pack(memory={"max_per_intent": 2}))
    assert [m.id for m in capped.recalls] == ["mem-0", "mem-1"]


def test_other_tenants_recalls_are_dropped_without_naming_them():
    recalls = [memory(1), memory(2, tenant_id="tenant-b"), memory(3)]
    out, seen = _recall(recalls)
    assert [m.id for m in out.recalls] == ["mem-1", "mem-3"]
    (withheld,) = out.withheld
    assert withheld.id != "mem-2" and withheld.reason == "belongs to another tenant"
    assert (seen[0].tenant_id, seen[0].user_id, seen[0].intent_id) == (
        "tenant-a",
        "user-1",
        "forge.execute",
    )


def test_filtered_rows_do_not_count_against_the_cap():
    recalls = [memory(0, tenant_id="x"), memory(1), memory(2), memory(3)]
    out, _ = _recall(recalls, pack(memory={"max_per_intent": 2}))
    assert [m.id for m in out.recalls] == ["mem-1", "mem-2"]


def test_subject_intent_and_classification_filters():
    p = pack(memory={"classifications": ["PUBLIC", "INTERNAL"]})
    recalls = [
        memory(1, user_id="user-1"),
        memory(2, user_id="user-2"),
        memory(3, intent_id="forge.plan"),
        memory(4, classification="PII"),
        memory(5),
    ]
    out, _ = _recall(recalls, p)
    assert [m.id for m in out.recalls] == ["mem-1", "mem-5"]
    assert {w.id: w.reason for w in out.withheld} == {
        "mem-2": "belongs to another subject",
        "mem-3": "promoted for intent forge.plan",
        "mem-4": "classification PII is not admitted by the pack",
    }


def test_recalls_reach_the_prompt_and_the_manifest():
    cc = compile_context(pack(), run_ctx(), request(), memory=lambda q: [memory(1)])
    assert (
        "## Memory\n\n- (semantic, promoted 2026-05-09T09:30:00Z) Fact number 1." in cc.task_prompt
    )
    assert [m.id for m in cc.manifests.memory_manifest] == ["mem-1"]
