from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker


@activity.defn(name="test__greet")
async def greet(name: str) -> str:
    return f"hello, {name}"


@workflow.defn(name="TestGreeting")
class GreetingWorkflow:
    @workflow.run
    async def run(self, name: str) -> str:
        return await workflow.execute_activity(
            greet, name, start_to_close_timeout=timedelta(seconds=30)
        )


async def test_session_env_runs_a_workflow(
    temporal_env: WorkflowEnvironment, task_queue: str
) -> None:
    async with Worker(
        temporal_env.client,
        task_queue=task_queue,
        workflows=[GreetingWorkflow],
        activities=[greet],
    ):
        result = await temporal_env.client.execute_workflow(
            GreetingWorkflow.run,
            "forge",
            id=f"greeting-{task_queue}",
            task_queue=task_queue,
        )
    assert result == "hello, forge"


async def test_session_env_is_shared(temporal_env: WorkflowEnvironment, task_queue: str) -> None:
    # A second test sees the same server but a fresh queue.
    assert task_queue.startswith("test-")
    assert await temporal_env.client.service_client.check_health()
