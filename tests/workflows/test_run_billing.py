"""The billing-audit demo end to end through Temporal, the sandbox and the stores."""

import json

from schemas.scope import Scope
from tests.workflows.engine import BILLING, billing_inputs, billing_plan, engine


async def test_billing_audit_runs_and_finds_exactly_the_answer_key(
    temporal_env, task_queue, tmp_path
):
    inputs = billing_inputs(tmp_path)
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(billing_plan(), inputs)
        assert result.status == "completed", result
        assert all(s.status == "done" for s in result.steps.values())
        by_path = {ref.path: ref for ref in result.outputs}
        found = json.loads(
            eng.services.artifacts.read_bytes(
                Scope.default(), by_path["output/discrepancies.json"].sha256, 10_000_000
            )
        )
        key = json.loads((tmp_path / "data" / "answer_key.json").read_text())
        assert sorted((d["entry_id"], d["kind"]) for d in found) == sorted(
            (d["entry_id"], d["kind"]) for d in key
        )
        report = eng.services.artifacts.read_bytes(
            Scope.default(), by_path["output/billing_audit_report.html"].sha256, 10_000_000
        ).decode()
        assert "<svg" in report
        # Every output is published once, with provenance, and the event log is intact.
        published = eng.services.events.list_published(result.run_id)
        assert sorted(p.path for p in published) == sorted(by_path)
        assert all(p.version == 1 for p in published)
        events = eng.services.events.list_events(run_id=result.run_id)
        types = [e.type for e in events]
        for t in (
            "run.started.v1",
            "run.compiled.v1",
            "step.started.v1",
            "step.receipt.preflight.v1",
            "step.receipt.postflight.v1",
            "step.completed.v1",
            "artifact.published.v1",
            "run.completed.v1",
        ):
            assert t in types, t
        assert all(e.caused_by for e in events if e.type != "run.started.v1")
        assert len({e.event_id for e in events}) == len(events)
        assert eng.services.events.verify_chain("default").ok
    assert BILLING.is_dir()


async def test_a_tenants_run_keeps_to_its_scope(temporal_env, task_queue, tmp_path):
    """A run submitted for tenant acme: every event is acme's, every artifact acme's alone."""
    acme = Scope(tenant="acme", project="audit")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        result = await eng.run(billing_plan(), billing_inputs(tmp_path), scope=acme)
        assert result.status == "completed", result
        assert result.scope == acme
        store = eng.services.artifacts
        for ref in result.outputs:
            assert store.exists(acme, ref.sha256)
            assert not store.exists(Scope.default(), ref.sha256)  # never under another tenant
        events = eng.services.events.list_events(run_id=result.run_id)
        assert {(e.scope.tenant, e.scope.project) for e in events} == {("acme", "audit")}
        assert eng.services.events.verify_chain("acme").ok
