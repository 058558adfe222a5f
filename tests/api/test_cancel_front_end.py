"""Issue 35 §1.5: `POST /v1/runs/{id}/cancel` stops a run in its front end.

Before, a run cancelled while its front end worked closed at once while the activity went on
(it never heartbeat, so it never heard), and nothing recorded run.cancelled. Here the planner's
model call is held by the test's Messages API server for a minute: the cancel must reach the
activity (compile__plan heartbeats and waits on the call where a cancel interrupts it), the run
must end cancelled while the model still has not answered, with run.cancelled recorded and
nothing compiled, spent or published.
"""

import asyncio
import json

import pytest
from pydantic import SecretStr
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import CancelledError

from activities.models.script import Script
from tests.api.server import running_api
from tests.support.messages_server import MessagesServer
from tests.workflows.model_env import API_KEY, text
from tests.workflows.test_model_runs import OBJECTIVE, PLAN

HELD_S = 60  # the script's longest delay: far longer than a cancel takes to arrive


@pytest.fixture
def slow_planner():
    held = {
        "when": {"consumer": "planner"},
        "delay_s": HELD_S,
        "response": text(json.dumps(PLAN), thinking=True),
    }
    with MessagesServer(Script.from_data({"responses": [held]})) as server:
        yield server


async def test_a_cancel_during_planning_stops_the_activity_and_the_run(
    temporal_env, task_queue, tmp_path, database_urls, slow_planner
):
    owner, app = database_urls
    async with running_api(
        temporal_env,
        task_queue,
        tmp_path / "home",
        owner,
        api_database_url=app,
        anthropic_api_key=SecretStr(API_KEY),
        anthropic_base_url=slow_planner.base_url,
    ) as api:
        async with api.client(role="operator") as http:
            started = await http.post("/v1/runs", json={"objective": OBJECTIVE})
            assert started.status_code == 201, started.text
            run_id = started.json()["run_id"]
            while not slow_planner.requests:  # the planner's call is in flight, held
                await asyncio.sleep(0.05)
            cancel = await http.post(f"/v1/runs/{run_id}/cancel")
            assert cancel.status_code == 202, cancel.text
            handle = api.eng.client.get_workflow_handle(run_id)
            with pytest.raises(WorkflowFailureError) as ended:
                await handle.result()
            assert isinstance(ended.value.cause, CancelledError)
            # Promptly: the run ended while the model had still not answered.
            assert slow_planner.answered == 0
            history = [e.event_type async for e in handle.fetch_history_events()]
            # The activity itself stopped (it reported its cancellation): it did not run on.
            assert EventType.EVENT_TYPE_ACTIVITY_TASK_CANCELED in history
            detail = await http.get(f"/v1/runs/{run_id}")
            assert detail.json()["workflow_status"] == "CANCELED", detail.text
            artifacts = await http.get(f"/v1/runs/{run_id}/artifacts")
            assert artifacts.status_code == 200 and artifacts.json()["artifacts"] == []
        types = [e.type for e in api.every_event(run_id=run_id)]
        assert types[0] == "run.started.v1" and types[-1] == "run.cancelled.v1", types
        assert "model.called.v1" not in types and "run.compiled.v1" not in types
        assert not any(t.startswith("step.") for t in types)
