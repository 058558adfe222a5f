"""Per-tenant fairness on the task queue (issue 35 §1): every workflow Forge starts carries its
tenant as the fairness key, its activities and child runs inherit it, and the dev server Forge
launches dispatches a backlog round-robin across tenants, so a flooding tenant waits on itself.
"""

import asyncio
import uuid
from datetime import timedelta

from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker

from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.test_gates import gated_plan
from workflows.policies import tenant_priority

FLOOD = 12  # tenant A's queued activities, all waiting before tenant B's one arrives


@activity.defn(name="fairness_probe__record")
async def record(tenant: str) -> str:
    return tenant


@workflow.defn(name="FairnessProbe", sandboxed=False)
class FairnessProbe:
    """One activity, on the activity queue named in its input; with a child probe if asked."""

    @workflow.run
    async def run(self, args: list[str]) -> str:
        tenant, activity_queue, *child = args
        if child:
            await workflow.execute_child_workflow(
                FairnessProbe.run, [tenant, activity_queue], id=child[0]
            )
        return await workflow.execute_activity(  # no priority of its own: it inherits
            record, tenant, task_queue=activity_queue, start_to_close_timeout=timedelta(minutes=1)
        )


async def scheduled(handle: WorkflowHandle) -> None:
    """Wait until the probe's activity task is on the queue, waiting for a worker."""
    for _ in range(400):
        if (await handle.describe()).raw_description.pending_activities:
            return
        await asyncio.sleep(0.05)
    raise AssertionError(f"{handle.id} scheduled no activity")


async def dispatch_order(client: Client, queue: str, probes: list[tuple[str, str]]) -> list[str]:
    """Queue one probe activity per (label, tenant), in order, with no activity worker; then
    drain them through a worker with one slot and return the labels in the order they ran."""
    activity_queue = f"{queue}-activities"
    ran: list[str] = []

    @activity.defn(name="fairness_probe__record")
    async def ran_in_order(label: str) -> str:
        ran.append(label)
        return label

    async with Worker(client, task_queue=queue, workflows=[FairnessProbe]):
        handles = []
        for label, tenant in probes:
            handle = await client.start_workflow(
                FairnessProbe.run,
                [label, activity_queue],
                id=f"probe-{label}-{uuid.uuid4()}",
                task_queue=queue,
                priority=tenant_priority(tenant),
            )
            await scheduled(handle)
            handles.append(handle)
        async with Worker(
            client,
            task_queue=activity_queue,
            activities=[ran_in_order],
            max_concurrent_activities=1,
        ):
            for handle in handles:
                await handle.result()
    return ran


async def test_a_tenants_one_task_is_dispatched_before_a_flooding_tenants_backlog(
    temporal_env, task_queue
):
    """Without fairness the queue is FIFO and B's task runs last, after all of A's; with it, B's
    runs at once (after at most the one A task already handed to the worker's poll)."""
    flood = [(f"a{i}", "tenant-a") for i in range(FLOOD)]
    order = await dispatch_order(temporal_env.client, task_queue, [*flood, ("b", "tenant-b")])
    assert sorted(order) == sorted(label for label, _ in [*flood, ("b", "")])
    assert order.index("b") <= 1, order
    assert [label for label in order if label != "b"] == [label for label, _ in flood]


async def test_within_one_tenant_the_queue_stays_first_in_first_out(temporal_env, task_queue):
    """The control: the late task under the flooding tenant's key runs last, so the order above
    is the fairness key's doing, not the worker's or the queue's partitions'."""
    probes = [(f"a{i}", "tenant-a") for i in range(FLOOD + 1)]
    order = await dispatch_order(temporal_env.client, task_queue, probes)
    assert order == [label for label, _ in probes]


async def test_activities_and_child_workflows_inherit_the_fairness_key(temporal_env, task_queue):
    """So Forge sets it only where a workflow starts from outside one (no workflow command)."""
    client = temporal_env.client
    child_id = f"probe-child-{uuid.uuid4()}"
    async with Worker(
        client, task_queue=task_queue, workflows=[FairnessProbe], activities=[record]
    ):
        parent = await client.start_workflow(
            FairnessProbe.run,
            ["acme", task_queue, child_id],
            id=f"probe-parent-{uuid.uuid4()}",
            task_queue=task_queue,
            priority=tenant_priority("acme"),
        )
        assert await parent.result() == "acme"
    child = await client.get_workflow_handle(child_id).describe()
    assert child.raw_description.workflow_execution_info.priority.fairness_key == "acme"
    history = await parent.fetch_history()
    [scheduled_activity] = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.HasField("activity_task_scheduled_event_attributes")
    ]
    assert not scheduled_activity.priority.fairness_key  # inherited, not set by the command


async def test_a_run_started_by_forge_carries_its_tenants_fairness_key(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan(), scope=Scope.of_tenant("acme"))
        described = await handle.describe()
        info = described.raw_description.workflow_execution_info
        assert info.priority.fairness_key == "acme"
        await handle.cancel()


def test_a_long_tenant_id_becomes_a_fairness_key_temporal_accepts_and_tells_apart():
    long_a, long_b = "a" * 127 + "x", "a" * 127 + "y"
    keys = {tenant_priority(t).fairness_key for t in (long_a, long_b)}
    assert len(keys) == 2
    assert all(k is not None and len(k.encode()) <= 64 for k in keys)
    assert tenant_priority("acme").fairness_key == "acme"


async def test_a_webhook_delivery_carries_its_tenants_fairness_key(
    temporal_env, task_queue, tmp_path
):
    from schemas.event_catalogue import GATE_REQUESTED
    from schemas.scope import Actor
    from schemas.webhooks import delivery_workflow_id
    from workers.process.webhook_dispatch import dispatch_once

    actor = Actor(id="acme-admin", name="acme admin", role="admin", kind="system")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        s = eng.services
        hook = s.webhooks.create("acme", "http://127.0.0.1:9/hook", [GATE_REQUESTED], actor)
        handle = await eng.start(gated_plan(), scope=Scope.of_tenant("acme"))
        for _ in range(400):
            requested = s.events.list_events(run_id=handle.id, type=GATE_REQUESTED)
            if requested:
                break
            await asyncio.sleep(0.05)
        assert await dispatch_once(eng.client, eng.settings, s.webhooks, s.events) == 1
        delivery = eng.client.get_workflow_handle(
            delivery_workflow_id(hook.webhook_id, requested[0].event_id)
        )
        info = (await delivery.describe()).raw_description.workflow_execution_info
        assert info.priority.fairness_key == "acme"
        await handle.cancel()
