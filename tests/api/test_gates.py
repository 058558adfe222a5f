"""Gates over HTTP: the inbox with evidence, a decision that resumes the run, and every way a
decision is refused without changing anything (wrong hash, duplicate, late, wrong role)."""

import asyncio

from activities.store.access import open_access_store
from schemas.event_catalogue import GATE_DECIDED
from schemas.scope import Actor
from tests.api.test_runs import finished
from tests.workflows.test_gates import gated_plan


async def open_gate(http, run_id: str) -> dict:
    for _ in range(600):
        gates = (await http.get("/v1/gates", params={"run_id": run_id})).json()["gates"]
        if gates:
            return gates[0]
        await asyncio.sleep(0.1)
    raise AssertionError("the gate never opened")


async def test_an_approval_over_http_resumes_the_run(api):
    async with api.client(role="operator") as ops, api.client(role="approver") as approver:
        run_id = (await ops.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
        gate = await open_gate(approver, run_id)
        assert (gate["gate_id"], gate["approver_role"], gate["prompt"]) == (
            "gate-ship",
            "ops",
            "Ship it?",
        )
        assert gate["gated_steps"] == ["ship"]
        url = f"/v1/gates/{gate['gate']}/decision"
        stale = await approver.post(
            url,
            json={"decision": "approve", "contract_hash": "sha256:" + "0" * 64, "comment": "ok"},
        )
        assert stale.status_code == 409 and stale.json()["code"] == "DECISION_REFUSED"
        assert "does not match" in stale.json()["detail"]
        assert (await open_gate(approver, run_id))["gate"] == gate["gate"]  # still open
        body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "ok"}
        decided = await approver.post(url, json=body)
        assert decided.status_code == 200, decided.text
        assert decided.json()["actor"]["id"] == "acme-approver"
        assert decided.json()["actor"]["role"] == "ops"
        assert (await finished(approver, run_id))["status"] == "completed"
        late = await approver.post(url, json=body)
        assert late.status_code == 409 and late.json()["code"] == "DECISION_REFUSED"
        assert "approve" in late.json()["detail"] or "ended" in late.json()["detail"]
    decisions = api.every_event(run_id=run_id, type=GATE_DECIDED)
    assert len(decisions) == 1


async def test_a_key_without_the_gates_role_or_permission_cannot_decide(api):
    async with api.client(role="operator") as ops, api.client(role="viewer") as viewer:
        run_id = (await ops.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
        gate = await open_gate(viewer, run_id)
        body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "ok"}
        refused = await viewer.post(f"/v1/gates/{gate['gate']}/decision", json=body)
        assert refused.status_code == 403 and refused.json()["code"] == "FORBIDDEN"
        assert "'approver'" in refused.json()["detail"]
        with open_access_store(api.settings.database_url) as access:
            bot = Actor(id="finance-bot", name="finance-bot", role="approver", kind="system")
            other = access.create_key("acme", "approver", bot, gate_roles=["finance"])
        async with api.client_with(other.token) as finance:
            wrong_role = await finance.post(f"/v1/gates/{gate['gate']}/decision", json=body)
        assert wrong_role.status_code == 403 and "'ops'" in wrong_role.json()["detail"]
        # The hint names the API's field, not the CLI's flag (issue 35 §3).
        assert (
            wrong_role.json()["hint"] == 'use a key created with gate_roles ["ops"] (POST /v1/keys)'
        )
        assert (await open_gate(viewer, run_id))["gate"] == gate["gate"]  # nothing changed
        await ops.post(f"/v1/runs/{run_id}/cancel")
