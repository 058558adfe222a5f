"""Quotas over HTTP (issue 20 §3): racing submissions for the last slot, 429 with Retry-After,
the daily token cap applied at start, a cancelled or terminated run freeing its slot, and
GET /v1/quota, each tenant seeing its own."""

import asyncio

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from tests.api.test_capsules import plain_plan
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.workflows.test_gates import gated_plan


def quota(api, tenant: str, **change: object) -> None:
    with open_tenant_settings(api.settings.database_url) as store:
        store.update(tenant, SettingsChange(**change), actor="test")


async def live_run(http) -> str:
    """A run that stays running (it waits at its gate)."""
    started = await http.post("/v1/runs", json={"plan": gated_plan()})
    assert started.status_code == 201, started.text
    await open_gate(http, started.json()["run_id"])
    return started.json()["run_id"]


async def listed(http, run_id: str) -> list[dict]:
    """The tenant's runs once `run_id` is among them (its first event lands a moment later)."""
    for _ in range(300):
        page = (await http.get("/v1/runs")).json()["runs"]
        if run_id in {r["run_id"] for r in page}:
            return page
        await asyncio.sleep(0.1)
    raise AssertionError(f"{run_id} never listed")


async def test_two_submissions_racing_for_the_last_slot_one_wins_one_gets_429(api):
    quota(api, "acme", max_concurrent_runs=2)
    async with api.client(role="operator") as http, api.client("globex", "operator") as globex:
        first = await live_run(http)
        before = (await http.get("/v1/runs")).json()["runs"]
        answers = await asyncio.gather(
            *(http.post("/v1/runs", json={"plan": gated_plan()}) for _ in range(2))
        )
        assert sorted(a.status_code for a in answers) == [201, 429], [a.text for a in answers]
        [refused] = [a for a in answers if a.status_code == 429]
        [won] = [a.json()["run_id"] for a in answers if a.status_code == 201]
        problem = refused.json()
        assert problem["code"] == "QUOTA_EXCEEDED"
        assert "tenant 'acme' runs 2 of its 2 concurrent runs" in problem["detail"]
        # The API's own words (issue 35 §3): no CLI command to run, an endpoint to read.
        assert "GET /v1/quota" in problem["hint"] and "--" not in problem["hint"], problem
        assert int(refused.headers["Retry-After"]) > 0
        after = await listed(http, won)
        assert len(after) == len(before) + 1  # the refused request started nothing
        usage = (await http.get("/v1/quota")).json()
        assert sorted(usage["live_runs"]) == sorted([first, won])
        assert usage["max_concurrent_runs"] == 2
        mine = (await globex.get("/v1/quota")).json()  # globex sees its own, unlimited
        assert (mine["live_runs"], mine["max_concurrent_runs"]) == ([], None)
        assert (await globex.post("/v1/runs", json={"plan": plain_plan()})).status_code == 201
        # A cancelled run ends (its run.cancelled.v1 frees the slot); a terminated one writes
        # no event, and is found closed in Temporal when the next submission counts.
        assert (await http.post(f"/v1/runs/{first}/cancel")).status_code == 202
        await finished(http, first)
        await api.eng.client.get_workflow_handle(won).terminate("test: a run killed by hand")
        again = await asyncio.gather(
            *(http.post("/v1/runs", json={"plan": plain_plan()}) for _ in range(2))
        )
        assert [a.status_code for a in again] == [201, 201], [a.text for a in again]


async def test_the_daily_token_cap_is_applied_when_a_run_starts(api):
    quota(api, "acme", max_tokens_per_day=1_500)
    async with api.client(role="operator") as http:
        started = await http.post("/v1/runs", json={"plan": gated_plan(), "max_tokens": 5_000})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        await open_gate(http, run_id)
        view = (await http.get(f"/v1/runs/{run_id}")).json()["view"]
        assert view["budget"]["limits"]["max_tokens"] == 1_500  # capped to what was left
        usage = (await http.get("/v1/quota")).json()
        assert (usage["tokens_today"], usage["tokens_left"]) == (1_500, 0)
        refused = await http.post("/v1/runs", json={"plan": plain_plan()})
        assert refused.status_code == 429, refused.text
        assert "used 1,500 of its 1,500 model tokens today (UTC)" in refused.json()["detail"]
        assert refused.json()["detail"].endswith(f"resets at {usage['resets_at'][:19]}Z")
        assert int(refused.headers["Retry-After"]) <= 86_401
        await http.post(f"/v1/runs/{run_id}/cancel")
        await finished(http, run_id)
        # The cancelled run used no tokens: the day's count gives its ceiling back.
        assert (await http.get("/v1/quota")).json()["tokens_left"] == 1_500


async def test_a_slot_held_by_a_run_terminated_by_hand_is_freed_for_the_next_start(api):
    """A terminated run writes no terminal event: its admission still counts until Temporal is
    asked. A start that the stored count would refuse asks it before refusing."""
    quota(api, "acme", max_concurrent_runs=1)
    async with api.client(role="operator") as http:
        held = await live_run(http)
        refused = await http.post("/v1/runs", json={"plan": plain_plan()})
        assert refused.status_code == 429, refused.text  # it is live: the slot is taken
        await api.eng.client.get_workflow_handle(held).terminate("test: a run killed by hand")
        started = await http.post("/v1/runs", json={"plan": plain_plan()})
        assert started.status_code == 201, started.text
        usage = (await http.get("/v1/quota")).json()
        assert usage["live_runs"] == [started.json()["run_id"]]
