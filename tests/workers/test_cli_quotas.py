"""Quotas from the CLI (issue 20 §3): `forge run` refused at a quota is one line and exit 2;
`forge budget extend` takes tokens from the tenant's day or is refused; `forge tenants show`
reports what the tenant uses."""

import asyncio
import json

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.budget import BudgetLimits
from schemas.scope import Scope
from tests.workflows.engine import engine
from tests.workflows.test_gates import gated_plan
from workflows.run import CompiledRunWorkflow

ACME = Scope.of_tenant("acme")


async def gate_open(handle) -> None:
    for _ in range(600):
        view = await handle.query(CompiledRunWorkflow.status)
        if view.gates:
            return
        await asyncio.sleep(0.1)
    raise AssertionError("the gate never opened")


async def test_a_quota_refuses_forge_run_and_caps_budget_extensions(
    cli, temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        assert (await asyncio.to_thread(cli, "tenants", "create", "acme")).exit_code == 0
        with open_tenant_settings(eng.settings.database_url) as store:
            change = SettingsChange(max_concurrent_runs=1, max_tokens_per_day=600)
            store.update("acme", change, actor="test")
        handle = await eng.start(gated_plan(), scope=ACME, budget=BudgetLimits(max_tokens=400))
        await gate_open(handle)
        plan = tmp_path / "plan.json"
        plan.write_text(json.dumps(gated_plan()))
        refused = await asyncio.to_thread(cli, "run", str(plan), "--tenant", "acme")
        assert refused.exit_code == 2, refused.output
        assert "QUOTA_EXCEEDED: tenant 'acme' runs 1 of its 1 concurrent runs" in refused.output
        assert "Traceback" not in refused.output
        too_much = await asyncio.to_thread(cli, "budget", "extend", handle.id, "--tokens", "500")
        assert too_much.exit_code == 2, too_much.output
        assert "has 200 of its 600 tokens left today" in too_much.output
        assert too_much.output.startswith("error: QUOTA_EXCEEDED: extension refused: ")
        ok = await asyncio.to_thread(cli, "budget", "extend", handle.id, "--tokens", "200")
        assert ok.exit_code == 0, ok.output
        assert "/ 600 tokens" in ok.output
        shown = await asyncio.to_thread(cli, "tenants", "show", "acme")
        assert "│ runs not ended       │ 1" in shown.output, shown.output
        assert "│ tokens today         │ 600 (resets" in shown.output, shown.output
        await handle.cancel()


async def test_reconciling_ends_a_run_temporal_never_heard_of_only_after_the_grace(
    temporal_env, tmp_path
):
    from datetime import UTC, datetime

    from activities.store.admissions import open_admissions
    from workers.services import quotas

    url = f"sqlite:///{tmp_path / 'forge.db'}"
    with open_tenant_settings(url) as store:
        store.update("acme", SettingsChange(max_concurrent_runs=5), actor="test")
    now = datetime.now(UTC)
    with open_admissions(url) as admissions:
        admissions.admit("acme", "run-lost", None, now - quotas.START_GRACE * 2)
        admissions.admit("acme", "run-starting", None, now)  # its start is on its way
        ended = await quotas.reconcile(temporal_env.client, admissions, "acme")
        assert ended == ["run-lost"]
        assert admissions.live("acme") == ["run-starting"]
