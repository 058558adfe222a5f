"""Model tokens and cost, and gate waits, recorded by real runs (Messages server, decided gate)."""

import json
from ipaddress import ip_address

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.net.outbound import OutboundClient
from activities.webhooks.send import WebhookActivities
from activities.webhooks.signing import webhook_secret
from schemas.scope import Scope
from schemas.webhooks import WebhookSendInput
from tests.api.receiver import Receiver
from tests.telemetry.readings import Readings
from tests.workflows.engine import engine
from tests.workflows.model_env import model_engine
from tests.workflows.test_gates import decision, gated_plan, pending_gate
from tests.workflows.test_model_runs import OBJECTIVE, SALES, SCRIPT
from workflows.run import CompiledRunWorkflow


async def test_tokens_and_cost_by_model_equal_the_ledgers(
    temporal_env, task_queue, tmp_path, readings: Readings
):
    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    async with model_engine(temporal_env, tmp_path / "home", task_queue, SCRIPT) as (eng, _):
        ref = eng.services.artifacts.put_file(
            Scope.default(), sales, logical_path="input/sales.csv"
        )
        handle = await eng.start_objective(OBJECTIVE, inputs={"sales": ref})
        result = await handle.result()
        called = [
            e for e in eng.services.events.list_events(run_id=handle.id)
            if e.type == "model.called.v1"
        ]  # fmt: skip
    assert result.status == "completed"
    for model in {e.payload["model"] for e in called}:
        mine = [e for e in called if e.payload["model"] == model]
        labels = {"forge.tenant": "default", "forge.model": model}
        given = readings.grew("forge.model.tokens", **labels, **{"forge.token.direction": "input"})
        got = readings.grew("forge.model.tokens", **labels, **{"forge.token.direction": "output"})
        assert given == sum(e.payload["input_tokens"] for e in mine) > 0
        assert got == sum(e.payload["output_tokens"] for e in mine) > 0
        cost = readings.grew("forge.model.cost", **labels)
        assert cost == pytest.approx(sum(e.payload["cost_usd"] for e in mine))
    assert readings.grew("forge.model.cost") == pytest.approx(result.budget.spent.cost_usd)


async def test_a_decided_gate_records_its_wait_by_decision(
    temporal_env, task_queue, tmp_path, readings: Readings
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        await handle.execute_update(CompiledRunWorkflow.decide_gate, decision(gate))
        result = await handle.result()
    assert result.status == "completed"
    approved = {"forge.tenant": "default", "forge.outcome": "approve"}
    assert readings.grew("forge.gate.wait", **approved) == 1  # one observation
    assert readings.grew("forge.steps", **{"forge.outcome": "completed"}) == 3


def test_each_webhook_delivery_attempt_is_counted_by_outcome(readings: Readings):
    key = b"k" * 32
    body = json.dumps({"type": "run.completed.v1", "data": {}})
    with Receiver(fail_first=1, secret=webhook_secret(key, "wh-1")) as receiver:
        send = WebhookActivities(OutboundClient(), [ip_address("127.0.0.1")], key).send
        inp = WebhookSendInput(webhook_id="wh-1", url=receiver.url, delivery_id="msg_1", body=body)
        with pytest.raises(ApplicationError):  # the receiver answers 500 first: retried
            ActivityEnvironment().run(send, inp)
        ActivityEnvironment().run(send, inp)
    assert [d.answered for d in receiver.deliveries] == [500, 200]
    assert readings.grew("forge.webhook.delivery.attempts", **{"forge.outcome": "delivered"}) == 1
    failed = {"forge.outcome": "WEBHOOK_UNAVAILABLE"}
    assert readings.grew("forge.webhook.delivery.attempts", **failed) == 1
