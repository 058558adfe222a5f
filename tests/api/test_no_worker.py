"""The API while no worker polls the run's task queue (issue 35 §2): it answers, and says so.

A run's status comes from its event log when the workflow cannot answer its query, marked
`"source": "events"`; a gate decision answers 503 with Retry-After and records nothing, and the
same request succeeds once a worker is back.
"""

from collections.abc import Iterator

import httpx
import pytest

from schemas.event_catalogue import GATE_DECIDED
from tests.api.server import api_without_worker
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.workflows.engine import engine
from tests.workflows.test_gates import gated_plan
from workers.settings import Settings


@pytest.fixture
def alone(
    temporal_env, task_queue, tmp_path, database_urls
) -> Iterator[tuple[str, Settings, dict]]:
    owner, app = database_urls
    with api_without_worker(
        temporal_env, task_queue, tmp_path / "home", owner, api_database_url=app
    ) as found:
        yield found


def _client(url: str, tokens: dict, role: str) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {tokens['acme', role]}"}
    return httpx.AsyncClient(base_url=url, headers=headers, timeout=60)


async def test_a_run_no_worker_serves_is_read_from_its_events(alone, temporal_env, tmp_path):
    url, settings, tokens = alone
    async with _client(url, tokens, "operator") as http:
        started = await http.post("/v1/runs", json={"plan": gated_plan()})
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        detail = await http.get(f"/v1/runs/{run_id}")
        assert detail.status_code == 200, detail.text
        body = detail.json()
        assert (body["source"], body["status"], body["workflow_status"]) == (
            "events",
            "compiling",
            "RUNNING",
        )
        assert body["view"] is None
        async with engine(temporal_env, tmp_path / "home", settings.task_queue, settings=settings):
            served = (await http.get(f"/v1/runs/{run_id}")).json()
            assert served["source"] == "workflow" and served["view"] is not None, served
            await open_gate(http, run_id)
        # The worker has gone with the run at its gate: the log knows the first step completed.
        gated = (await http.get(f"/v1/runs/{run_id}")).json()
        assert (gated["source"], gated["status"]) == ("events", "running"), gated
        assert gated["steps"] == {"prepare": "done", "ship": "awaiting_approval"}, gated


async def test_a_decision_no_worker_can_take_answers_503_and_the_same_one_succeeds_later(
    alone, temporal_env, tmp_path
):
    url, settings, tokens = alone
    home = tmp_path / "home"
    async with _client(url, tokens, "operator") as ops, _client(url, tokens, "approver") as appr:
        async with engine(temporal_env, home, settings.task_queue, settings=settings) as eng:
            run_id = (await ops.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
            gate = await open_gate(appr, run_id)
        decision = f"/v1/gates/{gate['gate']}/decision"
        body = {"decision": "approve", "contract_hash": gate["contract_hash"], "comment": "ok"}
        refused = await appr.post(decision, json=body)
        assert refused.status_code == 503, refused.text
        assert refused.json()["code"] == "WORKER_UNAVAILABLE"
        assert int(refused.headers["Retry-After"]) > 0
        assert "nothing was decided" in refused.json()["detail"]
        assert (await open_gate(appr, run_id))["gate"] == gate["gate"]  # still open
        async with engine(temporal_env, home, settings.task_queue, settings=settings) as eng:
            decided = await appr.post(decision, json=body)
            assert decided.status_code == 200, decided.text
            assert (await finished(appr, run_id))["status"] == "completed"
            decisions = eng.services.events.list_events(
                run_id=run_id, tenant_id="acme", type=GATE_DECIDED
            )
    assert len(decisions) == 1
