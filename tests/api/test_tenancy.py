"""Every endpoint, from /openapi.json, tried from the other tenant's side and with every role.

The list of operations is read from the published schema, so an endpoint added later is in
these tests without anyone adding it: each one must declare its permission (a `requires`
dependency) and, if it takes a body, have a sample body here.
"""

import re

import httpx
from fastapi.routing import APIRoute

from schemas.access import GRANTS, ROLES, least_role
from tests.api.test_gates import open_gate
from tests.workflows.test_gates import gated_plan
from workers.api.app import ROUTERS

SAMPLE_BODIES = {
    "start_run": {"plan": gated_plan()},
    "decide": {"decision": "approve", "contract_hash": "sha256:" + "0" * 64, "comment": "x"},
    "create_key": {"role": "viewer", "name": "probe"},
    "create_webhook": {"url": "https://hooks.example.com/forge", "events": ["run.failed.v1"]},
}
MULTIPART = {"upload": {"file": ("probe.txt", b"probe")}}


BODIES: set[str] = set()  # operations that take a body (filled from the spec)


def operations(spec: dict) -> list[tuple[str, str, str]]:
    found = []
    for path, methods in spec["paths"].items():
        for method, op in methods.items():
            found.append((method.upper(), path, op["operationId"]))
            if "requestBody" in op:
                BODIES.add(op["operationId"])
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


async def call(http: httpx.AsyncClient, method: str, path: str, op: str) -> httpx.Response:
    if op in MULTIPART:
        return await http.request(method, path, files=MULTIPART[op])
    if op in BODIES and op not in SAMPLE_BODIES:
        raise AssertionError(f"add a sample body for {op} to SAMPLE_BODIES")
    return await http.request(method, path, json=SAMPLE_BODIES.get(op))


async def test_every_endpoint_answers_404_to_another_tenants_ids_and_leaks_nothing(api):
    async with api.client(role="operator") as acme:
        run_id = (await acme.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
        gate = await open_gate(acme, run_id)
        spec = (await acme.get("/openapi.json")).json()
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
        "webhook_id": webhook_id,
    }
    missing = {name: f"{value}x" for name, value in ids.items()}
    missing["gate"] = f"{run_id}x:{gate['gate_id']}"
    async with api.client("globex", "admin") as globex:
        for method, path, op in operations(spec):
            answer = await call(globex, method, fill(path, ids), op)
            if "{" not in path:  # a list or a create: nothing of acme's in it
                assert answer.status_code < 300, (method, path, answer.text)
                assert run_id not in answer.text and key_id not in answer.text, (method, path)
                assert webhook_id not in answer.text, (method, path)
                continue
            assert answer.status_code == 404, (method, path, answer.text)
            # ... exactly as an id that does not exist answers (never 403: that would say
            # the id exists).
            absent = await call(globex, method, fill(path, missing), op)
            assert absent.status_code == 404, (method, path, absent.text)
            seen = answer.json()
            for name in ids:
                seen = {
                    k: v.replace(ids[name], missing[name]) if isinstance(v, str) else v
                    for k, v in seen.items()
                }
            assert seen == absent.json(), (method, path)
    async with api.client(role="operator") as acme:
        still = await open_gate(acme, run_id)  # nothing globex did reached acme's run
        assert still["gate"] == gate["gate"]
        mine = (await acme.get(f"/v1/webhooks/{webhook_id}")).json()
        assert mine["deleted_at"] is None  # globex's DELETE did not remove it
        await acme.post(f"/v1/runs/{run_id}/cancel")


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
                answer = await call(http, method, fill(path, ids), op)
            assert answer.status_code == 403, (role, method, path, answer.text)
            problem = answer.json()
            assert problem["code"] == "FORBIDDEN"
            assert f"needs role {least_role(permission)!r}" in problem["detail"], problem
            checked += 1
        async with api.anonymous() as anyone:
            answer = await call(anyone, method, fill(path, ids), op)
        assert answer.status_code == 401 and answer.json()["code"] == "UNAUTHENTICATED"
        assert answer.headers["www-authenticate"] == "Bearer"
    assert checked >= len(spec["paths"])
