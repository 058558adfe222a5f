"""Issue 35 §1: a request body, a plan and an objective each have a size cap over HTTP; what
is over one is refused (413, or 422 naming the field and its cap) and nothing is stored or run."""

import json

import pytest

from tests.api.test_errors import problem, written
from tests.workflows.plans import code_step, plan

PLAN = plan(code_step("a", "open('output/a.json','w').write('{}')", ["output/a.json"]))


def _huge(mission_bytes: int) -> bytes:
    return json.dumps({"plan": {**PLAN, "mission": "m" * mission_bytes}}).encode()


async def test_a_body_over_the_limit_is_413_on_every_json_route_and_starts_nothing(api):
    before = written(api)
    async with api.client(role="admin") as http:
        for size in (5_000_000, 20_000_000):  # issue 35: both were accepted with 201
            answer = await http.post(
                "/v1/runs", content=_huge(size), headers={"content-type": "application/json"}
            )
            body = problem(answer, 413, "REQUEST_TOO_LARGE")
            assert "4,194,304 bytes" in body["detail"]

        async def chunks():  # no Content-Length: counted as it streams, stopped at the limit
            yield b'{"objective": "'
            for _ in range(5_000):
                yield b"x" * 1_000
            yield b'"}'

        streamed = await http.post(
            "/v1/runs", content=chunks(), headers={"content-type": "application/json"}
        )
        problem(streamed, 413, "REQUEST_TOO_LARGE")
        key = await http.post(
            "/v1/keys",
            content=json.dumps({"role": "viewer", "name": "n" * 5_000_000}).encode(),
            headers={"content-type": "application/json"},
        )
        problem(key, 413, "REQUEST_TOO_LARGE")
    assert written(api) == before
    assert not api.every_event()


@pytest.fixture
async def small_body_api(api_with):
    async with api_with(api_max_body_bytes=2_000, api_max_upload_bytes=10_000) as found:
        yield found


async def test_the_body_limit_is_a_setting_and_uploads_keep_their_own(small_body_api):
    async with small_body_api.client(role="operator") as http:
        fits = await http.post("/v1/uploads", files={"file": ("ok.csv", b"x" * 9_000)})
        assert fits.status_code == 201, fits.text  # larger than the body limit: its own limit
        big = await http.post("/v1/runs", json={"objective": "x" * 3_000})
        problem(big, 413, "REQUEST_TOO_LARGE")


async def test_a_field_over_its_cap_is_422_naming_the_field_and_the_cap(api):
    before = written(api)
    async with api.client(role="operator") as http:
        long_mission = await http.post("/v1/runs", json={"plan": {**PLAN, "mission": "m" * 20_001}})
        body = problem(long_mission, 422, "CompilerError")
        [error] = body["errors"]
        assert error["field"] == "body.plan.mission", error
        assert "20,001 characters; at most 20,000" in error["message"], error
        steps = [{**PLAN["steps"][0], "code": "x" * (256 * 1024 + 1)}]
        long_code = await http.post("/v1/runs", json={"plan": {**PLAN, "steps": steps}})
        [error] = problem(long_code, 422, "CompilerError")["errors"]
        assert error["field"].endswith("code") and "262,144" in error["message"], error
        long_objective = await http.post("/v1/runs", json={"objective": "x" * 20_001})
        body = problem(long_objective, 422, "REQUEST_INVALID")
        assert body["errors"][0]["field"] == "body.objective"
        assert "20000" in body["errors"][0]["message"]
    assert written(api) == before
