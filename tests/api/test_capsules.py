"""Capsules and schedules over HTTP: every `forge capsule` and `forge schedule` verb has its
endpoint, and the headless capsule run reruns the sealed plan on new data."""

import asyncio
import json
import uuid

from schemas.scope import Scope
from tests.api.test_runs import counting_plan, finished
from tests.workflows.plans import code_step, plan
from workers.services.schedules import schedule_id
from workflows.policies import TENANT_ATTRIBUTE


async def upload(http, data: bytes) -> str:
    answer = await http.post("/v1/uploads", files={"file": ("data.csv", data)})
    assert answer.status_code == 201, answer.text
    return answer.json()["sha256"]


async def test_a_run_becomes_a_capsule_that_runs_headless_on_new_data(api):
    async with api.client(role="operator") as http:
        sha = await upload(http, b"a,b\n1,2\n")
        started = await http.post(
            "/v1/runs", json={"plan": counting_plan(), "inputs": {"data": sha}}
        )
        run_id = started.json()["run_id"]
        assert (await finished(http, run_id))["status"] == "completed"
        made = await http.post("/v1/capsules", json={"run_id": run_id, "name": "rows"})
        assert made.status_code == 201, made.text
        assert (made.json()["version"], made.json()["inputs"]) == (1, ["data"])
        again = await http.post("/v1/capsules", json={"run_id": run_id, "name": "rows"})
        assert again.status_code == 200 and again.json()["created"] is False
        listed = (await http.get("/v1/capsules")).json()["capsules"]
        assert [(c["name"], c["version"]) for c in listed] == [("rows", 1)]
        versions = (await http.get("/v1/capsules/rows/versions")).json()["capsules"]
        assert [c["capsule_hash"] for c in versions] == [made.json()["capsule_hash"]]
        shown = (await http.get("/v1/capsules/rows/versions/1")).json()
        assert shown["content"]["provenance"]["source_run_id"] == run_id
        same = (await http.get("/v1/capsules/rows/diff", params={"from": 1, "to": 1})).json()
        assert [s["change"] for s in same["steps"]] == ["unchanged"]
        newer = await upload(http, b"a,b\n1,2\n3,4\n5,6\n7,8\n")
        body = {"inputs": {"data": newer}}
        headers = {"Idempotency-Key": "rows-nightly-1"}
        ran = await http.post("/v1/capsules/rows/versions/1/runs", json=body, headers=headers)
        assert ran.status_code == 201, ran.text
        replay = await http.post("/v1/capsules/rows/versions/1/runs", json=body, headers=headers)
        assert replay.json() == ran.json()
        capsule_run = ran.json()["run_id"]
        assert (await finished(http, capsule_run))["status"] == "completed"
        got = await http.get(f"/v1/runs/{capsule_run}/artifacts/output/count.json")
        assert json.loads(got.content) == {"rows": 5}
        page = (await http.get("/v1/runs", params={"capsule": "rows"})).json()["runs"]
        assert [(r["run_id"], r["capsule"]) for r in page] == [(capsule_run, "rows@1")]
        bad = await http.post(
            "/v1/capsules/rows/versions/1/runs", json={"inputs": {"data": "/etc/passwd"}}
        )
        assert bad.status_code == 422 and "inputs.data" in bad.json()["detail"]
    async with api.client(role="admin") as admin:
        exported = await admin.get("/v1/capsules/rows/versions/1/export")
        assert exported.status_code == 200
        assert json.loads(exported.content)["schema_version"] == "forge.capsule-export/1"
    async with api.client("globex", "admin") as globex:
        imported = await globex.post(
            "/v1/capsules/import", files={"file": ("rows.json", exported.content)}
        )
        assert imported.status_code == 201, imported.text
        assert imported.json()["capsule_hash"] == made.json()["capsule_hash"]
        tampered = exported.content.replace(b'"rows"', b'"rowz"', 1)
        refused = await globex.post("/v1/capsules/import", files={"file": ("x.json", tampered)})
        assert refused.status_code == 422, refused.text
        assert [c["name"] for c in (await globex.get("/v1/capsules")).json()["capsules"]] == [
            "rows"
        ]


def test_no_two_tenants_schedules_share_a_temporal_id():
    """Tenant `acme` schedule `x-nightly` and tenant `acme-x` schedule `nightly` are two."""
    one = schedule_id(Scope(tenant="acme"), "x-nightly")
    other = schedule_id(Scope(tenant="acme-x"), "nightly")
    assert one != other
    assert not other.startswith(schedule_id(Scope(tenant="acme"), ""))


async def test_a_schedule_is_created_described_paused_changed_and_deleted(api):
    name = f"nightly-{uuid.uuid4().hex[:8]}"  # Temporal's schedules outlive the test's database
    async with api.client(role="operator") as http:
        run_id = (await http.post("/v1/runs", json={"plan": plain_plan()})).json()["run_id"]
        await finished(http, run_id)
        await http.post("/v1/capsules", json={"run_id": run_id, "name": "plain"})
        local = await http.post(
            "/v1/schedules",
            json={"name": "p", "capsule": "plain", "cron": "0 3 * * *",
                  "inputs": {"x": "data/{scheduled:%Y}.csv"}},
        )  # fmt: skip
        assert local.status_code == 422 and "inputs.x" in local.json()["detail"]
        made = await http.post(
            "/v1/schedules",
            json={
                "name": name,
                "capsule": "plain",
                "cron": "0 3 * * *",
                "tz": "Europe/Berlin",
            },
        )
        assert made.status_code == 201, made.text
        assert made.json()["next_times"] and made.json()["paused"] is False
        listed = (await http.get("/v1/schedules")).json()["schedules"]
        assert {"name": name, "capsule": "plain", "paused": False} in listed
        paused = await http.post(f"/v1/schedules/{name}/pause")
        assert paused.status_code == 200 and paused.json()["paused"] is True
        assert (await http.post(f"/v1/schedules/{name}/unpause")).json()["paused"] is False
        changed = await http.put(
            f"/v1/schedules/{name}",
            json={"capsule": "plain", "every": "1h", "overlap": "buffer-one"},
        )
        assert changed.status_code == 200, changed.text
        assert changed.json()["overlap"] == "buffer-one"
        described = (await http.get(f"/v1/schedules/{name}")).json()
        assert described["overlap"] == "buffer-one"
        assert (await http.post(f"/v1/schedules/{name}/trigger")).status_code == 200
        [now] = await scheduled_runs(http, name, 1)
        child = await api.eng.client.get_workflow_handle(now).describe()
        assert child.typed_search_attributes.get(TENANT_ATTRIBUTE) == "acme"  # a child, too
        window = {"start": "2026-01-01T02:30:00Z", "end": "2026-01-01T03:30:00Z"}
        back = await http.post(f"/v1/schedules/{name}/backfill", json=window)
        assert back.status_code == 202, back.text
        runs = await scheduled_runs(http, name, 2)
        assert f"sched-{name}-20260101-030000-" in " ".join(runs) and now in runs
        again = await http.post(f"/v1/schedules/{name}/backfill", json=window)
        assert again.status_code == 202  # the time already ran: no run, counted as refused
        assert (await refused(http, name))["already_ran"] == 1
        assert len(await scheduled_runs(http, name, 2)) == 2
        gone = await http.delete(f"/v1/schedules/{name}")
        assert gone.status_code == 204
        missing = await http.get(f"/v1/schedules/{name}")
        assert missing.status_code == 404 and missing.json()["code"] == "SCHEDULE_NOT_FOUND"


async def scheduled_runs(http, name: str, count: int) -> list[str]:
    """The schedule's runs once there are `count` (they start as Temporal fires them)."""
    for _ in range(600):
        page = (await http.get("/v1/runs", params={"capsule": "plain"})).json()["runs"]
        found = [r["run_id"] for r in page if r["run_id"].startswith(f"sched-{name}-")]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"schedule {name} made fewer than {count} runs")


async def refused(http, name: str) -> dict:
    for _ in range(600):
        described = (await http.get(f"/v1/schedules/{name}")).json()
        if described["already_ran"]:
            return described
        await asyncio.sleep(0.1)
    raise AssertionError(f"schedule {name} refused no start")


def plain_plan() -> dict:
    return plan(
        code_step("a", "open('output/a.json','w').write('{\"ok\": true}')", ["output/a.json"])
    )
