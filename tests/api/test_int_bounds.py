"""Integers beyond what holds them, in paths, queries and bodies, on SQLite and PostgreSQL:
a 422 naming the field (a store's overflow was a 500), and nothing is written."""

from tests.api.test_errors import PLAN, problem, written
from tests.workflows.plans import code_step, plan

BIG = 2**64  # beyond any column
INT32_OVER = 2**31  # beyond PostgreSQL's Integer (a version), inside SQLite's
INT64_OVER = 2**63  # beyond a BigInteger (an event position)
JSON_OVER = 2**53  # beyond what RFC 8785 JSON holds exactly
ONE_STEP = plan(code_step("a", "open('output/a.json','w').write('{}')", ["output/a.json"]))


def field_of(answer) -> str:
    return problem(answer, 422, "REQUEST_INVALID")["errors"][0]["field"]


async def test_path_and_query_integers_beyond_their_columns_are_422(api):
    before = written(api)
    async with api.client("acme", "admin") as http:
        run = "run-20260101-000000-000000-t00000000"
        for after in (INT64_OVER, BIG):
            answer = await http.get(f"/v1/runs/{run}/events", params={"after": after})
            assert field_of(answer) == "query.after"
        for cursor in (str(INT64_OVER), "9" * 19):
            assert field_of(await http.get("/v1/runs", params={"cursor": cursor})) == "query.cursor"
        for version in (INT32_OVER, BIG):
            answer = await http.get(f"/v1/capsules/rows/versions/{version}")
            assert field_of(answer) == "path.version"
            answer = await http.get(f"/v1/capsules/rows/versions/{version}/export")
            assert field_of(answer) == "path.version"
            answer = await http.get("/v1/capsules/rows/diff", params={"from": 1, "to": version})
            assert field_of(answer) == "query.to"
            answer = await http.get(f"/v1/runs/{run}/artifacts/a.json", params={"version": version})
            assert field_of(answer) == "query.version"
        # The largest each may be still reaches the handler: there is no such thing, so 404.
        top = await http.get(f"/v1/runs/{run}/events", params={"after": INT64_OVER - 1})
        assert top.status_code == 404, top.text
        page = await http.get("/v1/runs", params={"cursor": str(INT64_OVER - 1)})
        assert page.status_code == 200 and page.json()["runs"] == []
        newest = await http.get(f"/v1/capsules/rows/versions/{INT32_OVER - 1}")
        assert newest.status_code == 404, newest.text
    assert written(api) == before


async def test_body_integers_beyond_json_are_422_with_or_without_an_idempotency_key(api):
    before = written(api)
    async with api.client("acme", "operator") as http:
        for headers in ({}, {"Idempotency-Key": "wide-1"}):
            wide_param = await http.post(
                "/v1/runs", json={"plan": PLAN, "params": {"n": JSON_OVER}}, headers=headers
            )
            assert field_of(wide_param).startswith("body.params.n")
            wide_tokens = await http.post(
                "/v1/runs", json={"objective": "x", "max_tokens": BIG}, headers=headers
            )
            assert field_of(wide_tokens) == "body.max_tokens"
        # A plan is any JSON: its request hash refuses what canonical JSON cannot hold.
        wide_plan = {**PLAN, "mission": "m", "extra": JSON_OVER}
        keyed = await http.post(
            "/v1/runs", json={"plan": wide_plan}, headers={"Idempotency-Key": "wide-2"}
        )
        body = problem(keyed, 422, "REQUEST_INVALID")
        assert "Idempotency-Key" in body["detail"] and "2**53" in body["detail"]
        assert written(api) == before
        # The key was not taken: the corrected request starts its run under it.
        again = await http.post(
            "/v1/runs", json={"plan": ONE_STEP}, headers={"Idempotency-Key": "wide-2"}
        )
        assert again.status_code == 201, again.text


async def test_date_times_in_bodies_are_text_not_unix_times(api):
    async with api.client("acme", "admin") as http:
        key = await http.post("/v1/keys", json={"role": "viewer", "name": "n", "expires_at": 0})
        assert field_of(key) == "body.expires_at"
        backfill = await http.post(
            "/v1/schedules/nightly/backfill", json={"start": 0, "end": "2030-01-01T00:00:00Z"}
        )
        assert field_of(backfill) == "body.start"
