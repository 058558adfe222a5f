"""Every endpoint, from /openapi.json, tried from the other tenant's side and with every role.

The list of operations is read from the published schema, so an endpoint added later is in
these tests without anyone adding it: each one must declare its permission (a `requires`
dependency) and, if it takes a body, have a sample body here.
"""

import json
import re
import uuid

import httpx
from fastapi.routing import APIRoute

from schemas.access import GRANTS, ROLES, least_role
from tests.api.test_capsules import plain_plan
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.workflows.test_gates import gated_plan
from workers.api.app import ROUTERS

# A body's `{id}` is filled like the path's: a body naming another tenant's run, capsule or
# schedule must be answered as one naming nothing that exists.
SAMPLE_BODIES = {
    "start_run": {"plan": gated_plan()},
    "decide": {"decision": "approve", "contract_hash": "sha256:" + "0" * 64, "comment": "x"},
    "create_key": {"role": "viewer", "name": "probe"},
    "extract_capsule": {"run_id": "{source_run}", "name": "{name}-copy"},
    "run_capsule": {"inputs": {}, "params": {}},
    "create_schedule": {"name": "{name}-2", "capsule": "{name}", "cron": "0 3 * * *"},
    "update_schedule": {"capsule": "{name}", "every": "1h"},
    "backfill_schedule": {"start": "2026-01-01T00:00:00Z", "end": "2026-01-02T00:00:00Z"},
    "create_webhook": {"url": "https://hooks.example.com/forge", "events": ["run.failed.v1"]},
}
MULTIPART = {
    "upload": {"file": ("probe.txt", b"probe")},
    "import_capsule_version": {"file": ("probe.json", b'{"schema_version": "none"}')},
}
SAMPLE_QUERIES = {"diff_capsule": {"from": "1", "to": "1"}}
REFUSED = {"import_capsule_version": 422}  # its sample is no capsule export: refused, safely


BODIES: set[str] = set()  # operations that take a body (filled from the spec)
QUERIES: set[str] = set()  # operations with a required query parameter


def operations(spec: dict) -> list[tuple[str, str, str]]:
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            found.append((method.upper(), path, op["operationId"]))
            if "requestBody" in op:
                BODIES.add(op["operationId"])
            if any(p["in"] == "query" and p.get("required") for p in op.get("parameters", [])):
                QUERIES.add(op["operationId"])
    return sorted(found)


def permissions() -> dict[str, str]:
    """operationId -> the permission its route requires (from its `requires` dependency)."""
    found = {}
    for route in (r for router in ROUTERS for r in router.routes):
        if isinstance(route, APIRoute) and route.include_in_schema:
            names = [d.call.__name__ for d in route.dependant.dependencies if d.call]
            needed = [n.removeprefix("requires_") for n in names if n.startswith("requires_")]
            assert len(needed) == 1, f"{route.name} must declare exactly one permission: {names}"
            found[route.name] = needed[0].replace("_", ".", 1)
    return found


def fill(path: str, ids: dict[str, str]) -> str:
    return re.sub(r"\{(\w+)(?::path)?\}", lambda m: ids[m[1]], path)


def names_ids(op: str) -> bool:
    """Whether the operation's sample body names an id (then it is probed like a path)."""
    return re.search(r"\{\w+\}", json.dumps(SAMPLE_BODIES.get(op))) is not None


async def call(
    http: httpx.AsyncClient, method: str, path: str, op: str, ids: dict[str, str]
) -> httpx.Response:
    if op in QUERIES and op not in SAMPLE_QUERIES:
        raise AssertionError(f"add sample query parameters for {op} to SAMPLE_QUERIES")
    query = SAMPLE_QUERIES.get(op)
    if op in MULTIPART:
        return await http.request(method, path, files=MULTIPART[op], params=query)
    if op in BODIES and op not in SAMPLE_BODIES:
        raise AssertionError(f"add a sample body for {op} to SAMPLE_BODIES")
    body = SAMPLE_BODIES.get(op)
    sent = None if body is None else json.loads(fill(json.dumps(body), ids))
    return await http.request(method, path, json=sent, params=query)


def swapped(text: str, ids: dict[str, str], missing: dict[str, str]) -> str:
    """`text` with each id as its missing twin, in one pass (a gate id holds its run's id)."""
    by_value = {ids[k]: missing[k] for k in ids}
    alternatives = "|".join(re.escape(v) for v in sorted(by_value, key=len, reverse=True))
    return re.sub(alternatives, lambda m: by_value[m[0]], text)


async def acme_capsule_and_schedule(acme: httpx.AsyncClient, name: str) -> str:
    """A capsule `name` (from a finished run, whose id is returned) and a schedule `name`."""
    source = (await acme.post("/v1/runs", json={"plan": plain_plan()})).json()["run_id"]
    assert (await finished(acme, source))["status"] == "completed"
    made = await acme.post("/v1/capsules", json={"run_id": source, "name": name})
    assert made.status_code == 201, made.text
    body = {"name": name, "capsule": name, "cron": "0 3 * * *"}
    scheduled = await acme.post("/v1/schedules", json=body)
    assert scheduled.status_code == 201, scheduled.text
    return source


async def test_every_endpoint_answers_404_to_another_tenants_ids_and_leaks_nothing(api):
    name = f"probe{uuid.uuid4().hex[:8]}"  # a capsule and a schedule (Temporal is shared)
    async with api.client(role="operator") as acme:
        source = await acme_capsule_and_schedule(acme, name)
        run_id = (await acme.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
        gate = await open_gate(acme, run_id)
        spec = (await acme.get("/openapi.json")).json()
        before = (await acme.get(f"/v1/schedules/{name}")).json()
    async with api.client(role="admin") as admin:
        hook = await admin.post("/v1/webhooks", json=SAMPLE_BODIES["create_webhook"])
        webhook_id = hook.json()["webhook"]["webhook_id"]
    key_id = next(iter(api.tokens[("acme", "viewer")].split("_")[1:2]))
    ids = {
        "run_id": run_id,
        "gate": gate["gate"],
        "key_id": key_id,
        "step_key": "prepare",
        "path": "output/a.json",
        "name": name,
        "version": "1",
        "source_run": source,
        "webhook_id": webhook_id,
    }
    missing = {k: f"{value}x" for k, value in ids.items()}
    missing["gate"] = f"{run_id}x:{gate['gate_id']}"
    missing["version"] = ids["version"]  # the capsule is missing already; a version is a number
    try:
        async with api.client("globex", "admin") as globex:
            for method, path, op in operations(spec):
                answer = await call(globex, method, fill(path, ids), op, ids)
                leaked = [i for i in (run_id, key_id, source, name, webhook_id) if i in answer.text]
                if "{" not in path and not names_ids(op):  # a list or a create of its own
                    assert answer.status_code == REFUSED.get(op, answer.status_code), op
                    assert answer.status_code < 300 or op in REFUSED, (method, path, answer.text)
                    assert not leaked, (method, path, leaked)
                    continue
                assert answer.status_code == 404, (method, path, answer.text)
                # ... exactly as an id that does not exist answers (never 403: that would say
                # the id exists).
                absent = await call(globex, method, fill(path, missing), op, missing)
                assert absent.status_code == 404, (method, path, absent.text)
                assert json.loads(swapped(answer.text, ids, missing)) == absent.json(), path
        async with api.client(role="operator") as acme:
            still = await open_gate(acme, run_id)  # nothing globex did reached acme's run
            assert still["gate"] == gate["gate"]
            after = (await acme.get(f"/v1/schedules/{name}")).json()
            assert (after["paused"], after["when"], after["actions"]) == (
                before["paused"], before["when"], before["actions"]
            )  # fmt: skip
            kept = (await acme.get(f"/v1/capsules/{name}/versions")).json()["capsules"]
            assert [c["version"] for c in kept] == [1]
            mine = (await acme.get(f"/v1/webhooks/{webhook_id}")).json()
            assert mine["deleted_at"] is None  # globex's DELETE did not remove it
            await acme.post(f"/v1/runs/{run_id}/cancel")
    finally:
        async with api.client(role="operator") as acme:
            await acme.delete(f"/v1/schedules/{name}")


async def test_every_endpoint_refuses_a_role_without_its_permission_naming_the_role(api):
    async with api.anonymous() as anyone:
        spec = (await anyone.get("/openapi.json")).json()
    needs = permissions()
    ids = {
        "run_id": "r",
        "gate": "r:g",
        "key_id": "k",
        "step_key": "s",
        "path": "p",
        "name": "n",
        "version": "1",
        "source_run": "r",
        "webhook_id": "wh_0",
    }
    checked = 0
    for method, path, op in operations(spec):
        assert op in needs, f"{op} is served by a router missing from workers.api.app.ROUTERS"
        permission = needs[op]
        for role in ROLES:
            if permission in GRANTS[role]:
                continue
            async with api.client("acme", role) as http:
                answer = await call(http, method, fill(path, ids), op, ids)
            assert answer.status_code == 403, (role, method, path, answer.text)
            problem = answer.json()
            assert problem["code"] == "FORBIDDEN"
            assert f"needs role {least_role(permission)!r}" in problem["detail"], problem
            checked += 1
        async with api.anonymous() as anyone:
            answer = await call(anyone, method, fill(path, ids), op, ids)
        assert answer.status_code == 401 and answer.json()["code"] == "UNAUTHENTICATED"
        assert answer.headers["www-authenticate"] == "Bearer"
    assert checked >= len(spec["paths"])
