"""Stage 4: evidence is snapshot-bound, classification-aware and hash-addressed."""

from compiler.context import compile_context
from compiler.context.draft import Retrievers
from compiler.context.evidence import retrieve_evidence
from compiler.context.intent import classify_intent
from tests.compiler.context.build import (
    OTHER_SNAP,
    SNAP,
    draft,
    pack,
    ref,
    request,
    run_ctx,
    staged,
)


def _retrieve(refs, p=None, **req):
    p = p or pack()
    c, r = run_ctx(), request(**req)
    seen = []

    def retriever(query):
        seen.append(query)
        return refs

    retrievers = Retrievers(evidence=retriever)
    d = staged(draft(p, c, r), classify_intent, retrieve_evidence, retrievers=retrievers)
    return d.evidence, seen


def test_refs_from_another_snapshot_are_dropped_and_named():
    refs = [ref(1), ref(2, snapshot_id=OTHER_SNAP), ref(3)]
    out, _ = _retrieve(refs)
    assert [r.id for r in out.refs] == ["kg:item:1", "kg:item:3"]
    assert [(w.kind, w.id) for w in out.withheld] == [("evidence", "kg:item:2")]
    assert OTHER_SNAP in out.withheld[0].reason and SNAP in out.withheld[0].reason


def test_retriever_is_asked_with_intent_query_tenant_and_pinned_snapshot():
    _, seen = _retrieve([], intent_id="forge.execute.small", context_query={"order": "o-1"})
    (query,) = seen
    assert query.intent_id == "forge.execute.small"
    assert query.query == {"order": "o-1"}
    assert (query.tenant_id, query.snapshot_id) == ("tenant-a", SNAP)


def test_classification_filter_and_duplicates():
    p = pack(evidence={"classifications": ["PUBLIC", "INTERNAL"]})
    refs = [
        ref(1),
        ref(2, classification="PII"),
        ref(1, summary="again"),
        ref(3, classification="PUBLIC"),
    ]
    out, _ = _retrieve(refs, p)
    assert [r.id for r in out.refs] == ["kg:item:1", "kg:item:3"]
    assert out.refs[0].summary == "Order 1 was shipped."
    assert {w.id: w.reason for w in out.withheld} == {
        "kg:item:2": "classification PII is not admitted by the pack",
        "kg:item:1": "duplicate id (the first one is kept)",
    }


def test_no_retriever_means_no_evidence():
    cc = compile_context(pack(), run_ctx(), request())
    assert cc.manifests.evidence_manifest == []
    assert "## Evidence" not in cc.task_prompt


def test_manifest_carries_hash_class_and_classification_for_every_kept_ref():
    refs = [
        ref(1),
        ref(2, snapshot_id=OTHER_SNAP),
        ref(3, classification="PII", **{"class": "invoice"}),
    ]
    cc = compile_context(pack(), run_ctx(), request(), evidence=lambda q: refs)
    dumped = cc.model_dump(mode="json")["manifests"]
    assert dumped["snapshot_id"] == SNAP
    assert dumped["evidence_manifest"] == [
        {
            "id": "kg:item:1",
            "class": "order",
            "classification": "INTERNAL",
            "payload_hash": refs[0].payload_hash,
        },
        {
            "id": "kg:item:3",
            "class": "invoice",
            "classification": "PII",
            "payload_hash": refs[2].payload_hash,
        },
    ]
    assert [w["id"] for w in dumped["withheld"] if w["kind"] == "evidence"] == ["kg:item:2"]
    assert "- kg:item:3 (invoice, PII): Order 3 was shipped." in cc.task_prompt
