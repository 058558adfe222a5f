"""Every workflow Forge starts carries its tenant as the ForgeTenant search attribute (issue 20
§2), so Temporal's own tools scope by tenant; a namespace without it is a clear refusal."""

import asyncio

import pytest
from temporalio.testing import WorkflowEnvironment

from schemas.error_codes import ErrorCode
from schemas.run import RunInput
from schemas.run_source import ObjectiveSource, PlanSource
from schemas.scope import Scope
from tests.support.errors import raises_code
from tests.workflows.engine import engine
from tests.workflows.test_gates import gated_plan
from workers.process.devserver import find_binary
from workers.services import runs
from workers.settings import Settings
from workflows.policies import TENANT_ATTRIBUTE


async def listed(client, tenant: str, run_id: str, *, expect: bool) -> bool:
    """Whether Temporal's visibility lists `run_id` for `tenant` (polled: it lags a little)."""
    query = f'{TENANT_ATTRIBUTE.name} = "{tenant}"'
    for _ in range(600):  # a minute: visibility lags on a loaded machine
        found = [w.id async for w in client.list_workflows(query)]
        if (run_id in found) == expect:
            return expect
        await asyncio.sleep(0.1)
    return not expect


async def test_a_run_carries_its_tenant_and_is_listed_by_it(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan(), scope=Scope.of_tenant("acme"))
        described = await handle.describe()
        assert described.typed_search_attributes.get(TENANT_ATTRIBUTE) == "acme"
        assert await listed(eng.client, "acme", handle.id, expect=True)
        assert not await listed(eng.client, "globex", handle.id, expect=False)
        await handle.cancel()


async def test_a_namespace_without_the_attribute_is_refused_saying_what_to_do(tmp_path):
    bare = await WorkflowEnvironment.start_local(
        dev_server_existing_path=str(find_binary()), ui=False
    )  # no ForgeTenant registered, as a cluster nobody prepared
    async with bare:
        address = bare.client.service_client.config.target_host
        settings = Settings(home=tmp_path / "home", task_queue="nobody", temporal_address=address)
        client = await runs.connect(settings)  # Forge's client: its converter, its plugin
        run = RunInput(run_id=runs.new_run_id(), source=ObjectiveSource(objective="count the rows"))
        with raises_code(ErrorCode.SETTINGS_INVALID) as refused:
            await runs.start_run(client, settings, run)
    line = refused.value.line()
    assert "has no search attribute ForgeTenant" in line
    assert "temporal operator search-attribute create --namespace default" in line


async def test_a_worker_refuses_to_act_for_another_tenant_than_the_runs(
    temporal_env, task_queue, tmp_path
):
    """A workflow of acme whose input names globex (a bug, or a start forged around Forge's
    client): its first activity is refused before it writes anything, and globex's log and
    artifacts stay as they were; the same plan for acme alone runs."""
    from temporalio.client import WorkflowFailureError
    from temporalio.common import WorkflowIDReusePolicy

    from schemas.run import RunResult
    from tests.workflows.plans import chain
    from workflows.policies import tenant_attributes
    from workflows.run import CompiledRunWorkflow

    globex = Scope.of_tenant("globex")
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        document = chain(1)
        plan_ref = eng.services.artifacts.put_bytes(
            globex, runs.plan_bytes(document), logical_path="meta/plans/test.json"
        )
        before = eng.services.events.list_events(tenant_id="globex", limit=1000)
        run = RunInput(
            run_id=runs.new_run_id("globex"), source=PlanSource(plan_ref=plan_ref), scope=globex
        )
        handle = await eng.client.start_workflow(
            CompiledRunWorkflow.run,
            run,
            id=run.run_id,
            task_queue=task_queue,
            id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
            search_attributes=tenant_attributes("acme"),  # the run is acme's
            result_type=RunResult,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await handle.result()
        cause = failed.value.cause
        while getattr(cause, "cause", None) is not None and "TENANT_MISMATCH" not in str(cause):
            cause = cause.cause
        message = str(cause)
        assert "acts for tenant 'globex' but its workflow runs for tenant 'acme'" in message
        assert getattr(cause, "type", None) == "TENANT_MISMATCH"
        assert eng.services.events.list_events(tenant_id="globex", limit=1000) == before
        assert eng.services.events.list_events(run_id=run.run_id, limit=1000) == []
        fine = await eng.start(document, scope=globex)  # Forge's client: one tenant for both
        assert (await fine.result()).status == "completed"
