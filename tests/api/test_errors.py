"""Bad input over HTTP: each answer is one clear problem+json naming what and where, no
submitted secret is echoed, and nothing is written."""

from datetime import UTC, datetime, timedelta

import pytest

from activities.store.access import open_access_store
from schemas.scope import Actor
from tests.workflows.plans import code_step, plan

SECRET = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
PLAN = {"mission": "m", "run_inputs": [], "steps": []}


def written(api) -> tuple[int, int]:
    """(events, stored blobs): what a refused request must leave as it was."""
    events = len(api.every_event())
    root = api.settings.home / "artifacts"
    blobs = sum(1 for p in root.rglob("*") if p.is_file()) if root.exists() else 0
    return events, blobs


def problem(answer, status: int, code: str) -> dict:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"] == "application/problem+json"
    body = answer.json()
    assert body["code"] == code and body["status"] == status
    assert body["type"] == f"urn:forge:error:{code}" and body["detail"] and body["hint"]
    assert SECRET not in answer.text
    return body


async def test_malformed_and_unknown_input_is_422_naming_the_field(api):
    before = written(api)
    async with api.client(role="operator") as http:
        bad_json = await http.post(
            "/v1/runs", content=b'{"plan": {', headers={"content-type": "application/json"}
        )
        body = problem(bad_json, 422, "REQUEST_INVALID")
        assert "malformed JSON" in body["errors"][0]["message"]
        unknown = await http.post("/v1/runs", json={"plan": PLAN, "api_token": SECRET})
        body = problem(unknown, 422, "REQUEST_INVALID")
        assert body["errors"][0]["field"] == "body.api_token"
        both = await http.post("/v1/runs", json={"plan": PLAN, "objective": "x"})
        assert "exactly one" in problem(both, 422, "REQUEST_INVALID")["detail"]
        rejected = await http.post(
            "/v1/runs", json={"plan": {"mission": f"key {SECRET}", "steps": [{"step_key": "a"}]}}
        )
        body = problem(rejected, 422, "CompilerError")
        assert body["errors"] and all(e["field"].startswith("body.plan") for e in body["errors"])
        server_path = await http.post(
            "/v1/runs", json={"plan": PLAN, "inputs": {"data": "file:///etc/passwd"}}
        )
        assert "inputs.data" in problem(server_path, 422, "REQUEST_INVALID")["detail"]
        not_ours = await http.post(
            "/v1/runs", json={"plan": PLAN, "inputs": {"data": "sha256:" + "a" * 64}}
        )
        assert "no upload" in problem(not_ours, 422, "REQUEST_INVALID")["detail"]
        bad_limit = await http.get("/v1/runs", params={"limit": 0})
        assert problem(bad_limit, 422, "REQUEST_INVALID")["errors"][0]["field"] == "query.limit"
    assert written(api) == before


async def test_an_artifact_path_outside_what_was_published_is_not_found(api):
    async with api.client(role="operator") as http:
        run_id = (await http.post("/v1/runs", json={"plan": _one_step()})).json()["run_id"]
        for path in ("../../../etc/passwd", "output/../../forge.db", "%2e%2e/%2e%2e/x"):
            answer = await http.get(f"/v1/runs/{run_id}/artifacts/{path}")
            assert answer.status_code == 404, (path, answer.text)
            assert answer.headers["content-type"] == "application/problem+json"


def _one_step() -> dict:
    return plan(code_step("a", "open('output/a.json','w').write('{}')", ["output/a.json"]))


async def test_bad_revoked_and_expired_keys_are_401(api):
    with open_access_store(api.settings.database_url) as access:
        actor = Actor(id="old", name="old", role="viewer", kind="system")
        revoked = access.create_key("acme", "viewer", actor)
        access.revoke("acme", revoked.key.key_id)
        expired = access.create_key(
            "acme", "viewer", actor, expires_at=datetime.now(UTC) - timedelta(minutes=1)
        )
    cases = {
        "not a key": "Bearer not-a-forge-key",
        "unknown": "Bearer fk_0123456789ab_" + "A" * 43,
        "wrong secret": "Bearer " + revoked.token[:-4] + "AAAA",
        "revoked": "Bearer " + revoked.token,
        "expired": "Bearer " + expired.token,
        "basic": "Basic dXNlcjpwYXNz",
    }
    async with api.anonymous() as http:
        for case, header in cases.items():
            answer = await http.get("/v1/runs", headers={"Authorization": header})
            body = problem(answer, 401, "UNAUTHENTICATED")
            assert revoked.token not in answer.text and expired.token not in answer.text, case
            if case in ("revoked", "expired"):
                assert case in body["detail"], body


@pytest.fixture
async def small_api(api_with):
    async with api_with(api_max_upload_bytes=1000) as found:
        yield found


async def test_an_oversize_upload_is_413_and_stores_nothing(small_api):
    before = written(small_api)
    async with small_api.client(role="operator") as http:
        fits = await http.post("/v1/uploads", files={"file": ("ok.csv", b"x" * 1000)})
        assert fits.status_code == 201, fits.text
        after_fit = written(small_api)
        big = await http.post("/v1/uploads", files={"file": ("big.csv", b"x" * 1001)})
        problem(big, 413, "ARTIFACT_TOO_LARGE")
        huge = await http.post("/v1/uploads", files={"file": ("huge.csv", b"x" * 5_000_000)})
        problem(huge, 413, "ARTIFACT_TOO_LARGE")

        async def chunks():  # no Content-Length: counted as it streams
            yield b"--b\r\nContent-Disposition: form-data; name=file; filename=s.csv\r\n\r\n"
            for _ in range(200):
                yield b"x" * 1000
            yield b"\r\n--b--\r\n"

        streamed = await http.post(
            "/v1/uploads",
            content=chunks(),
            headers={"content-type": "multipart/form-data; boundary=b"},
        )
        problem(streamed, 413, "ARTIFACT_TOO_LARGE")
    assert before[0] == after_fit[0] and written(small_api) == after_fit
