"""HTTP's own refusals, as problem+json and as /openapi.json says: 405 names what the path
allows, a body of another media type is 415, one that cannot be parsed is 400."""

from tests.api.test_errors import PLAN, problem, written

BODY_OPERATIONS = {("post", "/v1/runs"), ("post", "/v1/uploads"), ("put", "/v1/schedules/{name}")}


async def test_a_method_the_path_does_not_take_is_405_with_allow(api):
    async with api.client("acme", "admin") as http:
        runs = await http.delete("/v1/runs")
        problem(runs, 405, "REQUEST_INVALID")
        # /v1/runs has two routes, GET and POST: Allow names both.
        assert runs.headers["allow"] == "GET, POST"
        one = await http.patch("/v1/schedules/nightly")
        problem(one, 405, "REQUEST_INVALID")
        assert one.headers["allow"] == "DELETE, GET, PUT"


async def test_a_body_of_another_media_type_is_415(api):
    before = written(api)
    async with api.client("acme", "operator") as http:
        text = await http.post(
            "/v1/runs", content=b'{"objective": "x"}', headers={"content-type": "text/plain"}
        )
        assert "application/json" in problem(text, 415, "REQUEST_INVALID")["detail"]
        assert text.headers["accept-post"] == "application/json"
        untyped = await http.post("/v1/runs", content=b'{"objective": "x"}')
        problem(untyped, 415, "REQUEST_INVALID")
        json_upload = await http.post("/v1/uploads", json={"file": "abc"})
        assert "multipart/form-data" in problem(json_upload, 415, "REQUEST_INVALID")["detail"]
        put = await http.put(
            "/v1/schedules/nightly", content=b"capsule=x", headers={"content-type": "text/csv"}
        )
        problem(put, 415, "REQUEST_INVALID")
        # A JSON media type with parameters, or a +json one, is JSON.
        charset = await http.post(
            "/v1/runs",
            content=b'{"plan": {"mission": "m"}, "objective": "x"}',
            headers={"content-type": "application/json; charset=utf-8"},
        )
        assert "exactly one" in problem(charset, 422, "REQUEST_INVALID")["detail"]
    assert written(api) == before


async def test_a_body_that_cannot_be_parsed_is_400(api):
    async with api.client("acme", "operator") as http:
        not_utf8 = await http.post(
            "/v1/runs", content=b"\xff\xfe{", headers={"content-type": "application/json"}
        )
        problem(not_utf8, 400, "REQUEST_INVALID")
        ok = await http.post("/v1/runs", json={"plan": PLAN, "objective": "x"})
        problem(ok, 422, "REQUEST_INVALID")


async def test_openapi_declares_every_status_as_the_server_sends_it(api):
    async with api.anonymous() as http:
        spec = (await http.get("/openapi.json")).json()
    schemas = spec["components"]["schemas"]
    assert "HTTPValidationError" not in schemas and "Problem" in schemas
    for path, ops in spec["paths"].items():
        for method, op in ops.items():
            statuses = set(op["responses"])
            assert {"401", "403", "500", "503"} <= statuses, (method, path)
            if op.get("parameters") or "requestBody" in op:
                assert "422" in statuses, (method, path)
            if "requestBody" in op:
                assert {"400", "415"} <= statuses, (method, path)
            for status, answer in op["responses"].items():
                if int(status) >= 400:
                    assert list(answer["content"]) == ["application/problem+json"], (path, status)
                    assert answer["content"]["application/problem+json"]["schema"] == {
                        "$ref": "#/components/schemas/Problem"
                    }
    for method, path in BODY_OPERATIONS:
        assert "requestBody" in spec["paths"][path][method]
    upload = schemas["Body_upload"]["properties"]["file"]
    assert upload["format"] == "binary" and upload["contentMediaType"] == "application/octet-stream"


async def test_a_nul_character_anywhere_is_422_on_every_database(api):
    """PostgreSQL cannot store U+0000: it was a 500 there (the fuzzer's `?run_id=%00`)."""
    before = written(api)
    async with api.client("acme", "admin") as http:
        query = await http.get("/v1/gates", params={"run_id": "run\x00x"})
        assert problem(query, 422, "REQUEST_INVALID")["errors"][0]["field"] == "query"
        path = await http.get("/v1/runs/run%00x/events")
        assert problem(path, 422, "REQUEST_INVALID")["errors"][0]["field"] == "path"
        body = await http.post("/v1/keys", json={"role": "viewer", "name": "a\x00b"})
        assert problem(body, 422, "REQUEST_INVALID")["errors"][0]["field"] == "body"
        assert written(api) == before
        # A backslash followed by u0000 is text, not the escape: it is a fine name.
        text = await http.post("/v1/keys", json={"role": "viewer", "name": "a\\u0000b"})
        assert text.status_code == 201, text.text
        assert text.json()["key"]["actor"]["name"] == "a\\u0000b"
