"""`forge budget show|extend` and the budget in `forge status`, on a run blocked by its budget."""

import asyncio

from schemas.budget import BudgetLimits
from tests.workflows.engine import engine
from tests.workflows.test_budgets import PER_STEP, independent, profile, seed_usage, wait_status
from workers.services import runs


async def test_blocked_run_shown_and_extended_from_the_cli(cli, temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        run_id = runs.new_run_id()
        for i in range(3):
            seed_usage(eng.services.events, run_id, f"s{i}")
        handle = await eng.start(
            independent(3),
            run_id=run_id,
            profile_document=profile(max_parallel_steps=1),
            budget=BudgetLimits(max_tokens=PER_STEP, max_cost_usd=5.0),
        )
        await wait_status(handle, "budget_exhausted")
        shown = await asyncio.to_thread(cli, "status", run_id)
        assert f"run {run_id}: budget_exhausted" in shown.output
        assert "budget: 400 / 400 tokens · $0.0100 / $5.00 · 1 model calls" in shown.output
        assert (
            "blocked: budget exhausted" in shown.output and "waiting steps: s1, s2" in shown.output
        )
        refusals = [
            (("--tokens", "abc"), "Invalid value for '--tokens': Input should be a valid integer"),
            (("--tokens", "-5"), "--tokens must be a finite amount of 0 or more, not -5"),
            (("--cost", "-1.5"), "--cost must be a finite amount of 0 or more, not -1.5"),
            (("--cost", "nan"), "--cost must be a finite amount of 0 or more, not nan"),
            (("--cost", "inf"), "--cost must be a finite amount of 0 or more, not inf"),
            ((), "give --tokens N, --cost USD or both"),
        ]
        for args, message in refusals:
            bad = await asyncio.to_thread(cli, "budget", "extend", run_id, *args)
            assert bad.exit_code == 2, bad.output
            assert message in bad.output, bad.output
        # The run's own refusal keeps its code (it was USAGE_INVALID before issue 34 §2).
        no_reason = await asyncio.to_thread(
            cli, "budget", "extend", run_id, "--tokens", "5", "--reason", " "
        )
        assert no_reason.exit_code == 2, no_reason.output
        assert no_reason.output.startswith(
            "error: EXTENSION_REFUSED: extension refused: an extension needs a reason"
        ), no_reason.output
        unchanged = await asyncio.to_thread(cli, "budget", "show", run_id)
        assert "400 / 400 tokens" in unchanged.output and "extended" not in unchanged.output
        # One source of the run's state: budget show agrees with status (issue 34 §4).
        assert f"run {run_id}: budget_exhausted" in unchanged.output, unchanged.output
        ok = await asyncio.to_thread(
            cli, "budget", "extend", run_id, "--tokens", "2000", "--as", "ana", "--reason", "ok"
        )
        assert ok.exit_code == 0, ok.output
        assert f"{run_id} extended by ana" in ok.output and "/ 2,400 tokens" in ok.output
        assert "blocked" not in ok.output
        result = await handle.result()
    assert result.status == "completed" and result.budget.spent.tokens == 3 * PER_STEP
    final = await asyncio.to_thread(cli, "budget", "show", run_id)
    assert "1,200 / 2,400 tokens" in final.output and "extended 1×" in final.output
    ended = await asyncio.to_thread(cli, "budget", "extend", run_id, "--tokens", "5")
    assert ended.exit_code == 2, ended.output
    assert ended.output.startswith(f"error: RUN_ENDED: cannot extend the budget of run {run_id}")
