"""Webhooks over HTTP, delivered by the real worker to a real receiver on loopback.

A gate opened reaches the receiver signed (verified by the `standardwebhooks` library), after
Temporal retried the two attempts it failed; the receiver decides the gate with one call made
from the message alone, and the run's completion is delivered next. A receiver that always
fails, and a loopback address the operator did not allow, end in webhook.failed.v1.
"""

import asyncio
import base64
import json
from collections.abc import AsyncIterator
from ipaddress import ip_address

import pytest
from sqlalchemy import select

from activities.store.engine import create_store_engine
from activities.store.tables import idempotency_records
from schemas.webhooks import WEBHOOK_DELIVERED, WEBHOOK_FAILED
from tests.api.conftest import Api
from tests.api.receiver import Receiver
from tests.api.test_gates import open_gate
from tests.api.test_runs import finished
from tests.workflows.test_gates import gated_plan

LOOPBACK = (ip_address("127.0.0.1"),)


@pytest.fixture
async def hooked_api(api_with) -> AsyncIterator[Api]:
    """The API and its worker; deliveries may reach 127.0.0.1 only, in at most 8 attempts."""
    async with api_with(webhook_allow_ips=LOOPBACK) as found:
        yield found


@pytest.fixture
async def strict_api(api_with) -> AsyncIterator[Api]:
    """As hooked_api, but a delivery gets two attempts."""
    async with api_with(webhook_allow_ips=LOOPBACK, webhook_max_attempts=2) as found:
        yield found


async def deliveries(http, webhook_id: str, count: int, timeout_s: float = 90) -> list[dict]:
    """The webhook's delivery records, once there are `count` of them."""
    for _ in range(int(timeout_s * 10)):
        found = (await http.get(f"/v1/webhooks/{webhook_id}/deliveries")).json()["deliveries"]
        if len(found) >= count:
            return found
        await asyncio.sleep(0.1)
    raise AssertionError(f"webhook {webhook_id} has not {count} delivery records: {found}")


def secret_parts(secret: str) -> list[str]:
    key = secret.removeprefix("whsec_")
    return [secret, key, base64.b64decode(key).hex()]


async def test_a_gate_opened_is_signed_retried_and_decided_with_one_call(hooked_api):
    api = hooked_api
    with Receiver(fail_first=2, decide=(api.url, api.tokens["acme", "approver"])) as receiver:
        async with api.client(role="admin") as admin, api.client(role="operator") as ops:
            registered = await admin.post(
                "/v1/webhooks",
                json={"url": receiver.url, "events": ["gate.requested.v1", "run.completed.v1"]},
            )
            assert registered.status_code == 201, registered.text
            created = registered.json()
            secret = created["secret"]
            assert secret.startswith("whsec_")
            receiver.secret = secret
            hook = created["webhook"]["webhook_id"]

            run_id = (await ops.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
            assert (await finished(ops, run_id))["status"] == "completed"
            records = await deliveries(admin, hook, 2)

            listed = await admin.get("/v1/webhooks")
            shown = await admin.get(f"/v1/webhooks/{hook}")
            assert [w["webhook_id"] for w in listed.json()["webhooks"]] == [hook]
            assert shown.json()["url"] == receiver.url and shown.json()["deleted_at"] is None
            for answer in (listed, shown, await admin.get(f"/v1/webhooks/{hook}/deliveries")):
                assert not any(part in answer.text for part in secret_parts(secret))

    gate_posts = [d for d in receiver.deliveries if d.message["type"] == "gate.requested.v1"]
    assert [d.answered for d in gate_posts] == [500, 500, 200]  # retried by Temporal
    assert len({d.headers["webhook-id"] for d in gate_posts}) == 1  # one delivery, three tries
    for post in gate_posts:
        assert post.headers["webhook-id"] == post.message["id"]
        assert post.headers["webhook-timestamp"].isdigit()
        assert post.headers["webhook-signature"].startswith("v1,")
        assert post.headers["Content-Type"] == "application/json"

    gate = receiver.verified[0]
    assert (gate["type"], gate["tenant"], gate["run_id"]) == ("gate.requested.v1", "acme", run_id)
    assert gate["data"]["decision_path"] == f"/v1/gates/{run_id}:gate-ship/decision"
    assert gate["data"]["approver_role"] == "ops"
    assert gate["data"]["gated_steps"] == ["ship"]
    assert [d.status_code for d in receiver.decisions] == [200]  # decided with one call
    assert receiver.decisions[0].json()["actor"]["id"] == "acme-approver"
    assert [m["type"] for m in receiver.verified] == ["gate.requested.v1", "run.completed.v1"]
    assert receiver.verified[1]["run_id"] == run_id

    by_type = {r["payload"]["event_type"]: r for r in records}
    assert {r["type"] for r in records} == {WEBHOOK_DELIVERED}
    assert by_type["gate.requested.v1"]["payload"]["attempts"] == 3
    assert by_type["gate.requested.v1"]["payload"]["status"] == 200
    assert by_type["gate.requested.v1"]["payload"]["delivery_id"] == gate["id"]
    assert by_type["run.completed.v1"]["payload"]["attempts"] == 1
    assert by_type["gate.requested.v1"]["stream_id"] == "webhooks:acme"
    assert by_type["gate.requested.v1"]["run_id"] is None  # the run's own log stays closed

    # The secret is in no event and no stored answer (the idempotency store included).
    everything = api.every_event()
    dumped = json.dumps([e.model_dump(mode="json") for e in everything])
    assert not any(part in dumped for part in secret_parts(secret))


async def test_another_tenant_cannot_see_or_remove_a_webhook_and_bad_ones_are_refused(
    hooked_api,
):
    api = hooked_api
    async with api.client("acme", "admin") as acme, api.client("globex", "admin") as globex:
        first = await acme.post(
            "/v1/webhooks",
            json={"url": "https://hooks.example.com/forge", "events": ["run.failed.v1"]},
            headers={"Idempotency-Key": "hook-1"},
        )
        again = await acme.post(
            "/v1/webhooks",
            json={"url": "https://hooks.example.com/forge", "events": ["run.failed.v1"]},
            headers={"Idempotency-Key": "hook-1"},
        )
        assert first.status_code == again.status_code == 201, first.text
        assert again.headers["idempotent-replayed"] == "true"
        assert again.json() == first.json()  # the same webhook, the same secret
        hook = first.json()["webhook"]["webhook_id"]
        secret = first.json()["secret"]

        for method, path in (
            ("GET", f"/v1/webhooks/{hook}"),
            ("GET", f"/v1/webhooks/{hook}/deliveries"),
            ("DELETE", f"/v1/webhooks/{hook}"),
        ):
            theirs = await globex.request(method, path)
            absent = await globex.request(method, path.replace(hook, "wh_0000000000000000"))
            assert theirs.status_code == absent.status_code == 404, theirs.text
            assert (
                theirs.json()["detail"].replace(hook, "wh_0000000000000000")
                == (absent.json()["detail"])
            )
        assert (await globex.get("/v1/webhooks")).json() == {"webhooks": []}

        bad_url = await acme.post(
            "/v1/webhooks", json={"url": "ftp://example.com/x", "events": ["run.failed.v1"]}
        )
        assert bad_url.status_code == 422 and bad_url.json()["code"] == "WEBHOOK_INVALID"
        assert "scheme 'ftp'" in bad_url.json()["detail"]
        bad_event = await acme.post(
            "/v1/webhooks", json={"url": "https://example.com/x", "events": ["step.started.v1"]}
        )
        assert bad_event.status_code == 422 and bad_event.json()["code"] == "REQUEST_INVALID"
        assert bad_event.json()["errors"][0]["field"] == "body.events.0"
        async with api.client("acme", "operator") as ops:
            refused = await ops.post(
                "/v1/webhooks", json={"url": "https://example.com/x", "events": ["run.failed.v1"]}
            )
        assert refused.status_code == 403 and "'admin'" in refused.json()["detail"]

        removed = await acme.delete(f"/v1/webhooks/{hook}")
        assert removed.status_code == 200 and removed.json()["deleted_at"] is not None
        assert (await acme.get("/v1/webhooks")).json() == {"webhooks": []}
        assert (await acme.get(f"/v1/webhooks/{hook}")).json()["deleted_at"] is not None

    engine = create_store_engine(api.settings.database_url)
    try:
        with engine.connect() as conn:
            stored = json.dumps([r.response for r in conn.execute(select(idempotency_records))])
    finally:
        engine.dispose()
    assert hook in stored and not any(part in stored for part in secret_parts(secret))


async def test_a_failing_receiver_and_an_address_not_allowed_end_in_webhook_failed(strict_api):
    api = strict_api
    with Receiver(always_fail=True) as failing, Receiver(host="127.0.0.2") as elsewhere:
        async with api.client(role="admin") as admin, api.client(role="operator") as ops:
            hooks = []
            for receiver in (failing, elsewhere):
                made = await admin.post(
                    "/v1/webhooks", json={"url": receiver.url, "events": ["gate.requested.v1"]}
                )
                assert made.status_code == 201, made.text
                receiver.secret = made.json()["secret"]
                hooks.append(made.json()["webhook"]["webhook_id"])
            run_id = (await ops.post("/v1/runs", json={"plan": gated_plan()})).json()["run_id"]
            await open_gate(ops, run_id)
            [failed] = await deliveries(admin, hooks[0], 1)
            [blocked] = await deliveries(admin, hooks[1], 1)
            await ops.post(f"/v1/runs/{run_id}/cancel")

    assert failed["type"] == WEBHOOK_FAILED
    assert failed["payload"]["attempts"] == 2 and failed["payload"]["status"] == 500
    assert failed["payload"]["code"] == "WEBHOOK_UNAVAILABLE"
    assert "answered 500" in failed["payload"]["error"]
    assert [d.answered for d in failing.deliveries] == [500, 500]

    assert blocked["type"] == WEBHOOK_FAILED
    assert blocked["payload"]["code"] == "EGRESS_BLOCKED"
    assert blocked["payload"]["attempts"] == 1 and blocked["payload"].get("status") is None
    assert "127.0.0.2" in blocked["payload"]["error"]
    assert elsewhere.deliveries == []  # refused before anything was sent
