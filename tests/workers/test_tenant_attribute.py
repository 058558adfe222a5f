"""Every workflow Forge starts carries its tenant as the ForgeTenant search attribute (issue 20
§2), so Temporal's own tools scope by tenant; a namespace without it is a clear refusal."""

import asyncio

import pytest
from temporalio.testing import WorkflowEnvironment

from schemas.run import RunInput
from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.test_gates import gated_plan
from workers import runs
from workers.devserver import find_binary
from workers.settings import Settings
from workflows.policies import TENANT_ATTRIBUTE


async def listed(client, tenant: str, run_id: str, *, expect: bool) -> bool:
    """Whether Temporal's visibility lists `run_id` for `tenant` (polled: it lags a little)."""
    query = f'{TENANT_ATTRIBUTE.name} = "{tenant}"'
    for _ in range(100):
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
        run = RunInput(run_id=runs.new_run_id(), objective="count the rows")
        with pytest.raises(runs.SearchAttributeMissing) as refused:
            await runs.start_run(client, settings, run)
    line = refused.value.line()
    assert "has no search attribute ForgeTenant" in line
    assert "temporal operator search-attribute create --namespace default" in line
