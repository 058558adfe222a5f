"""Runs over HTTP: start a plan with an uploaded input, follow it, read events, artifacts and
receipts, cancel; an Idempotency-Key replays the first answer and starts nothing twice."""

import asyncio
import hashlib
import json

from schemas.event_catalogue import RUN_STARTED
from tests.workflows.plans import code_step, plan

READ_INPUT = """
import json
rows = open('input/data.csv').read().splitlines()
open('output/count.json', 'w').write(json.dumps({"rows": len(rows)}))
"""


def counting_plan() -> dict:
    step = code_step("count", READ_INPUT, ["output/count.json"], reads=["input/data.csv"])
    return plan(step, run_inputs=[{"name": "data", "path": "input/data.csv", "required": True}])


async def finished(client, run_id: str) -> dict:
    for _ in range(600):
        detail = (await client.get(f"/v1/runs/{run_id}")).json()
        if detail["workflow_status"] != "RUNNING":
            return detail
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} did not finish")


async def test_a_plan_run_with_an_upload_runs_and_its_artifact_downloads_with_its_hash(api):
    async with api.client(role="operator") as http:
        up = await http.post("/v1/uploads", files={"file": ("data.csv", b"a,b\n1,2\n3,4\n")})
        assert up.status_code == 201, up.text
        sha = up.json()["sha256"]
        assert sha == "sha256:" + hashlib.sha256(b"a,b\n1,2\n3,4\n").hexdigest()
        started = await http.post(
            "/v1/runs", json={"plan": counting_plan(), "inputs": {"data": sha}}
        )
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        assert started.json()["steps"] == 1
        detail = await finished(http, run_id)
        assert detail["status"] == "completed", detail
        listed = (await http.get(f"/v1/runs/{run_id}/artifacts")).json()
        assert [a["path"] for a in listed["artifacts"]] == ["output/count.json"]
        got = await http.get(f"/v1/runs/{run_id}/artifacts/output/count.json")
        assert got.status_code == 200 and json.loads(got.content) == {"rows": 3}
        assert got.headers["x-forge-sha256"] == "sha256:" + hashlib.sha256(got.content).hexdigest()
        assert got.headers["x-forge-sha256"] == listed["artifacts"][0]["sha256"]
        events = (await http.get(f"/v1/runs/{run_id}/events")).json()["events"]
        assert events[0]["type"] == RUN_STARTED
        # Every event of the run is the tenant's and carries the key's actor.
        assert {(e["scope"]["tenant"], e["scope"]["actor"]["id"]) for e in events} == {
            ("acme", "acme-operator")
        }
        receipts = (await http.get(f"/v1/runs/{run_id}/steps/count/receipts")).json()
        assert {r["phase"] for r in receipts} == {"preflight", "postflight"}
        page = (await http.get("/v1/runs", params={"status": "completed"})).json()
        assert [r["run_id"] for r in page["runs"]] == [run_id]
        assert (await http.get("/v1/runs", params={"status": "running"})).json()["runs"] == []
        ended = await http.post(f"/v1/runs/{run_id}/cancel")
        assert ended.status_code == 409
        assert ended.headers["content-type"] == "application/problem+json"
        assert ended.json()["code"] == "RUN_ENDED"


async def test_an_idempotency_key_replays_the_first_run_and_refuses_another_body(api):
    body = {
        "plan": plan(code_step("a", "open('output/a.json','w').write('{}')", ["output/a.json"]))
    }
    async with api.client(role="operator") as http:
        headers = {"Idempotency-Key": "order-42"}
        first = await http.post("/v1/runs", json=body, headers=headers)
        again = await http.post("/v1/runs", json=body, headers=headers)
        assert first.status_code == again.status_code == 201
        assert again.json() == first.json() and again.headers["idempotent-replayed"] == "true"
        other = await http.post(
            "/v1/runs", json={**body, "plan_name": "other.json"}, headers=headers
        )
        assert other.status_code == 422 and other.json()["code"] == "IDEMPOTENCY_MISMATCH"
        await finished(http, first.json()["run_id"])
    started = api.every_event(type=RUN_STARTED, tenant_id="acme")
    assert [e.run_id for e in started] == [first.json()["run_id"]]


async def test_runs_list_pages_with_a_cursor_newest_first(api):
    body = {
        "plan": plan(code_step("a", "open('output/a.json','w').write('{}')", ["output/a.json"]))
    }
    async with api.client(role="operator") as http:
        ids = []
        for _ in range(3):  # one after another: runs posted at once may start in any order
            ids.append((await http.post("/v1/runs", json=body)).json()["run_id"])
            await finished(http, ids[-1])
        first = (await http.get("/v1/runs", params={"limit": 2})).json()
        rest = (
            await http.get("/v1/runs", params={"limit": 2, "cursor": first["next_cursor"]})
        ).json()
    assert [r["run_id"] for r in first["runs"] + rest["runs"]] == ids[::-1]
    assert rest["next_cursor"] is None
