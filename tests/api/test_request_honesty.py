"""Requests the API refuses instead of quietly bending (issue 35 §3): a key that would never
work or a role no one can type back, and an upload whose name it would have to rewrite."""

import json
from datetime import UTC, datetime, timedelta

import pytest

from tests.workers.test_cli_params import READS
from tests.workflows.engine import billing_plan
from tests.workflows.plans import code_step, plan


async def _field(answer) -> str:
    assert answer.status_code == 422, answer.text
    assert answer.json()["code"] == "REQUEST_INVALID"
    return ",".join(e["field"] for e in answer.json()["errors"])


async def test_a_key_that_expired_already_or_a_role_with_blanks_is_refused(api):
    past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
    future = (datetime.now(UTC) + timedelta(days=1)).isoformat()
    async with api.client() as admin:
        expired = await admin.post(
            "/v1/keys", json={"role": "viewer", "name": "late", "expires_at": past}
        )
        assert await _field(expired) == "body.expires_at"
        assert "in the past" in expired.json()["detail"]
        for role in ("", " ", "ops team", "ops\n", "a\x07b", "ops\u0085"):
            bad = await admin.post(
                "/v1/keys", json={"role": "approver", "name": "x", "gate_roles": [role]}
            )
            assert await _field(bad) == "body.gate_roles.0", role
        for name in (" ", "bell\x07", "\tlead"):
            bad = await admin.post("/v1/keys", json={"role": "viewer", "name": name})
            assert await _field(bad) == "body.name", name
        ok = await admin.post(
            "/v1/keys",
            json={
                "role": "approver",
                "name": "Finance lead",
                "gate_roles": ["finance", "ops-eu"],
                "expires_at": future,
            },
        )
        assert ok.status_code == 201, ok.text
        listed = (await admin.get("/v1/keys")).json()["keys"]
    assert {"late", "x"}.isdisjoint(k["actor"]["id"] for k in listed)  # nothing refused was stored


@pytest.mark.parametrize("name", ["../../etc/passwd", "données.csv", ".hidden", "a b.csv"])
async def test_an_upload_whose_name_would_be_rewritten_is_refused(api, name):
    async with api.client(role="operator") as http:
        refused = await http.post("/v1/uploads", files={"file": (name, b"a,b\n1,2\n")})
        assert await _field(refused) == "body.file.filename"
        assert "rename the file" in refused.json()["detail"]
        kept = await http.post("/v1/uploads", files={"file": ("hours-2026.csv", b"a\n")})
        assert kept.status_code == 201 and kept.json()["filename"] == "hours-2026.csv"


async def test_a_refusal_shared_with_the_cli_names_the_api_fields_not_its_flags(api):
    with_params = {
        **plan(code_step("reads", READS, ["output/values.json"])),
        "parameters": [{"name": "cutoff", "type": "string"}],
    }
    async with api.client(role="operator") as http:
        for body, field in (
            ({"plan": billing_plan()}, "body.inputs.time_entries"),
            ({"plan": with_params, "params": {"limt": "1"}}, "body.params.limt"),
            ({"plan": with_params}, "body.params.cutoff"),
        ):
            refused = await http.post("/v1/runs", json=body)
            problem = refused.json()
            assert problem["code"] == "PARAMETER_INVALID", (body, problem)
            said = problem["detail"] + problem["hint"] + json.dumps(problem["errors"])
            assert "--input" not in said and "--param" not in said, said
            assert field in [e["field"] for e in problem["errors"]], problem
            assert field.removeprefix("body.") in problem["detail"], problem


async def test_a_schedule_refusal_names_the_api_fields_not_the_cli_flags(api):
    """Issue 35 §3: the schedule checks are shared with `forge schedule create`."""
    from tests.api.test_capsules import plain_plan
    from tests.api.test_runs import finished

    async with api.client(role="operator") as http:
        run_id = (await http.post("/v1/runs", json={"plan": plain_plan()})).json()["run_id"]
        await finished(http, run_id)
        await http.post("/v1/capsules", json={"run_id": run_id, "name": "plain"})
        base = {"name": "honest", "capsule": "plain"}
        for body, fields in (
            ({**base, "cron": "@every 1h"}, {"body.cron", "body.every"}),
            ({**base, "cron": "0 3 * *"}, {"body.cron"}),
            ({**base, "cron": "0 3 * * *", "every": "1h"}, {"body.cron", "body.every"}),
            ({**base, "every": "1y"}, {"body.every"}),
            ({**base, "every": "1h", "tz": "Mars/Olympus"}, {"body.tz"}),
            ({**base, "every": "1h", "catchup_window": "0s"}, {"body.catchup_window"}),
            ({**base, "every": "1h", "inputs": {"ghost": "s3://in/a.csv"}}, {"body.inputs.ghost"}),
        ):
            refused = await http.post("/v1/schedules", json=body)
            assert refused.status_code == 422, (body, refused.text)
            problem = refused.json()
            assert problem["code"] == "SCHEDULE_INVALID", (body, problem)
            said = problem["detail"] + problem["hint"] + json.dumps(problem["errors"])
            assert "--" not in said, said
            assert {e["field"] for e in problem["errors"]} == fields, problem
        assert (await http.get("/v1/schedules/honest")).status_code == 404  # nothing was made


async def test_a_role_refusal_says_how_over_the_api_not_with_a_cli_command(api):
    async with api.client(role="viewer") as http:
        refused = await http.post("/v1/runs", json={"plan": plan(code_step("a", "pass", []))})
    problem = refused.json()
    assert refused.status_code == 403 and problem["code"] == "FORBIDDEN", problem
    assert "POST /v1/keys" in problem["hint"] and "forge keys" not in problem["hint"], problem
