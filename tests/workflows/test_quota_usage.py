"""A run's tokens count against its tenant's day as its own budget counted them (issue 20 §3):
the ledger of model calls, not the zero cost line run__finalize writes."""

from datetime import UTC, datetime

from activities.store.tenant_settings import SettingsChange, open_tenant_settings
from schemas.budget import BudgetLimits
from schemas.scope import DEFAULT_TENANT
from tests.workflows.engine import engine
from tests.workflows.test_budgets import PER_STEP, independent, seed_usage
from workers.services import runs


async def test_a_completed_run_counts_what_its_budget_counted_against_the_day(
    temporal_env, task_queue, tmp_path
):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        with open_tenant_settings(eng.settings.database_url) as store:
            change = SettingsChange(max_tokens_per_day=50_000)
            store.update(DEFAULT_TENANT, change, actor="test")
        run_id = runs.new_run_id()
        for i in range(3):
            seed_usage(eng.services.events, run_id, f"s{i}")
        result = await eng.run(independent(3), run_id=run_id, budget=BudgetLimits(max_tokens=9_000))
        usage = eng.services.admissions.usage(DEFAULT_TENANT, datetime.now(UTC))
    assert result.status == "completed"
    assert result.budget.limits.max_tokens == 9_000  # under the 50,000 left: its own cap
    assert result.budget.spent.tokens == 3 * PER_STEP
    assert usage.live_runs == [] and usage.tokens_today == 3 * PER_STEP  # not 0, nor 9,000
    assert usage.tokens_left == 50_000 - 3 * PER_STEP
