"""A run's id says whose run it is (issue 20 §2): the workflow id of any tenant's run but the
default's ends with the tenant's tag, so two tenants never share one and Temporal's own tools
show whose a workflow is; a run whose id lacks its tenant's tag is refused before it starts."""

import re

import pytest

from schemas.run import RunInput
from schemas.run_source import ObjectiveSource
from schemas.scope import Scope, tenant_tag
from tests.api.test_runs import counting_plan
from workers.services import runs
from workers.settings import Settings

PLAIN = re.compile(r"run-\d{8}-\d{6}-[0-9a-f]{6}")


def test_a_tenants_run_id_ends_with_its_tag_and_the_defaults_is_plain():
    acme, globex = runs.new_run_id("acme"), runs.new_run_id("globex")
    assert PLAIN.fullmatch(runs.new_run_id())
    assert re.fullmatch(PLAIN.pattern + r"-t[0-9a-f]{8}", acme)
    assert acme.endswith(tenant_tag("acme")) and globex.endswith(tenant_tag("globex"))
    assert tenant_tag("acme") != tenant_tag("globex")


async def test_a_run_id_without_its_tenants_tag_is_refused_before_it_starts(tmp_path):
    run = RunInput(
        run_id=runs.new_run_id(),
        source=ObjectiveSource(objective="x"),
        scope=Scope.of_tenant("acme"),
    )
    with pytest.raises(ValueError, match=r"of tenant 'acme' must end with '-t[0-9a-f]{8}'"):
        await runs.start_run(None, Settings(home=tmp_path), run)  # type: ignore[arg-type]


async def test_an_api_run_and_a_capsule_run_carry_the_tenants_tag(api):
    async with api.client(role="operator") as http:
        up = await http.post("/v1/uploads", files={"file": ("d.csv", b"a,b\n1,2\n")})
        body = {"plan": counting_plan(), "inputs": {"data": up.json()["sha256"]}}
        started = await http.post("/v1/runs", json=body)
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        assert run_id.endswith(tenant_tag("acme")), run_id
        described = await api.eng.client.get_workflow_handle(run_id).describe()
        assert described.id == run_id
