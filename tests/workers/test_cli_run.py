"""`forge run|status|runs|artifacts|receipts|cancel|events` against a real Temporal server."""

import asyncio
import json
import re
from pathlib import Path

import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import CancelledError

from tests.workflows.engine import BILLING, billing_inputs, engine, wait_for_event
from tests.workflows.plans import code_step, plan, write_json

PLAN = BILLING / "frozen-plan.json"


def _inputs(tmp_path: Path) -> list[str]:
    args = []
    for name, path in billing_inputs(tmp_path).items():
        args += ["--input", f"{name}={path}"]
    return args


def _run_id(output: str) -> str:
    return re.search(r"run-\d{8}-\d{6}-[0-9a-f]{6}", output).group(0)


def test_run_then_inspect_with_every_verb(cli, tmp_path):
    ran = cli("run", PLAN, *_inputs(tmp_path))
    assert ran.exit_code == 0, ran.output
    run_id = _run_id(ran.output)
    assert f"run {run_id} completed" in ran.output
    copied = tmp_path / "home" / "outputs" / run_id / "output" / "billing_audit_report.html"
    assert copied.is_file() and "<svg" in copied.read_text()

    status = cli("status", run_id)
    assert status.exit_code == 0 and status.output.count("done") == 7

    listed = cli("artifacts", run_id)
    assert listed.exit_code == 0 and "output/discrepancies.json" in listed.output
    dest = tmp_path / "d.json"
    got = cli("artifacts", "get", run_id, "output/discrepancies.json", "-o", dest)
    assert got.exit_code == 0 and len(json.loads(dest.read_text())) == 43
    unpublished = cli("artifacts", "get", run_id, "output/nope.json", "-o", dest)
    assert unpublished.exit_code == 2
    assert unpublished.output.startswith(f"error: NOT_FOUND: {run_id} published nothing at")

    receipts = cli("receipts", run_id, "find_discrepancies")
    assert receipts.exit_code == 0
    assert "preflight" in receipts.output and "postflight" in receipts.output
    assert "output/contract_applicability.json" in receipts.output
    no_step = cli("receipts", run_id, "nope")
    assert no_step.exit_code == 2
    assert no_step.output.startswith("error: NOT_FOUND: no receipts for step 'nope'"), (
        no_step.output
    )
    # Another tenant sees nothing of this run: not its outputs, not its bytes, not its receipts.
    for other in (
        ("artifacts", run_id, "--tenant", "globex"),
        ("artifacts", "get", run_id, "output/discrepancies.json", "-o", dest, "--tenant", "globex"),
        ("receipts", run_id, "find_discrepancies", "--tenant", "globex"),
    ):
        refused = cli(*other)
        assert refused.exit_code == 2 and f"no run '{run_id}' for tenant 'globex'" in refused.output
        assert "output/" not in refused.output.split("for tenant")[0]

    runs = cli("runs", "--status", "completed")
    assert runs.exit_code == 0 and run_id in runs.output
    assert cli("runs", "--status", "weird").exit_code == 2

    events = cli("events", "list", "--run", run_id)
    assert events.exit_code == 0 and "run.completed.v1" in events.output
    assert cli("events", "verify").exit_code == 0


def test_bad_input_is_refused_before_anything_runs(cli, tmp_path):
    missing = cli("run", PLAN, "--input", f"time_entries={tmp_path / 'x.csv'}")
    assert missing.exit_code == 2 and "missing required input" in missing.output
    unknown = cli("run", PLAN, *_inputs(tmp_path), "--input", "bogus=a.csv")
    assert unknown.exit_code == 2 and "not a run input" in unknown.output
    malformed = cli("run", PLAN, "--input", "no-equals-sign")
    assert malformed.exit_code == 2 and "NAME=PATH" in malformed.output
    assert not (tmp_path / "home" / "outputs").exists()


def test_a_failing_run_exits_1_and_says_why(cli, tmp_path):
    doc = plan(
        code_step("boom", "raise SystemExit('no rates loaded')", ["output/x.json"]),
        code_step(
            "next",
            write_json("output/y.json"),
            ["output/y.json"],
            depends_on=["boom"],
            reads=["output/x.json"],
        ),
    )
    path = tmp_path / "fail.json"
    path.write_text(json.dumps(doc))
    ran = cli("run", path)
    assert ran.exit_code == 1
    assert "CODE_ERROR" in ran.output and "no rates loaded" in ran.output
    assert "upstream step 'boom' failed" in ran.output
    # Its workflow completed (with a failed result): `forge runs` says what became of the run.
    run_id = _run_id(ran.output)
    failed = cli("runs", "--status", "failed")
    assert failed.exit_code == 0 and run_id in failed.output
    assert re.search(rf"{run_id}\s+│?\s*failed", failed.output), failed.output
    assert run_id not in cli("runs", "--status", "completed").output
    # An ended run cannot be cancelled: one clear line, exit 2, nothing changed.
    late = cli("cancel", run_id)
    assert late.exit_code == 2 and "already ended (completed); nothing was changed" in late.output


async def test_detach_then_cancel(cli, temporal_env, task_queue, tmp_path):
    doc = plan(
        code_step(
            "wait", "import time\ntime.sleep(60)\n" + write_json("output/w.json"), ["output/w.json"]
        )
    )
    path = tmp_path / "slow.json"
    path.write_text(json.dumps(doc))
    started = await asyncio.to_thread(cli, "run", path, "--detach")
    assert started.exit_code == 0, started.output
    assert f"no worker polls task queue {task_queue} now" in started.output
    run_id = _run_id(started.output)
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        await wait_for_event(eng.services.events, run_id, "step.started.v1")
        quick = tmp_path / "quick.json"
        quick.write_text(
            json.dumps(plan(code_step("q", write_json("output/q.json"), ["output/q.json"])))
        )
        second = await asyncio.to_thread(cli, "run", quick, "--detach")
        assert second.exit_code == 0 and "no worker polls" not in second.output, second.output
        cancelled = await asyncio.to_thread(cli, "cancel", run_id)
        assert cancelled.exit_code == 0
        handle = eng.client.get_workflow_handle(run_id)
        with pytest.raises(WorkflowFailureError) as err:
            await handle.result()
        assert isinstance(err.value.cause, CancelledError)
    status = await asyncio.to_thread(cli, "status", run_id)
    assert "canceled" in status.output


def test_run_an_objective_shows_the_recipe_and_the_trail(cli, tmp_path):
    ran = cli("run", "-o", "reconcile the invoices against the rate cards and flag discrepancies")
    # The billing-audit recipe seeds the plan; its first model-written step needs a model, and
    # this worker has none (no ANTHROPIC_API_KEY), which the run says, every step badged.
    assert ran.exit_code == 1, ran.output
    assert "recipe forge/billing-audit" in ran.output and "effort" in ran.output
    assert "searched" in ran.output and "matched" in ran.output
    assert "forge/billing-audit" in ran.output.split("matched", 1)[1]
    assert "EXECUTOR_UNAVAILABLE" in ran.output
    trivial = cli("run", "-o", "thanks!")
    assert trivial.exit_code == 0 and "nothing to run (a trivial objective)" in trivial.output
    status = cli("status", _run_id(ran.output))
    assert "recipe forge/billing-audit" in status.output and "recipe" in status.output


def test_a_run_that_fails_while_planning_says_why(cli):
    # No recipe matches and no model provider is configured: the planner cannot run.
    objective = "compose a sonnet about the tides of the northern sea at dusk"
    ran = cli("run", "-o", objective)
    assert ran.exit_code == 1, ran.output
    assert "run failed:" in ran.output
    reason = ran.output.split("run failed:", 1)[1].strip().splitlines()[0]
    assert reason and "Traceback" not in ran.output
    status = cli("status", _run_id(ran.output))
    assert status.exit_code == 1
    # Before: "run RUN: failed" and nothing else.
    assert f"{_run_id(ran.output)}: failed: {reason[:40]}" in " ".join(status.output.split())


def test_run_needs_exactly_one_of_a_plan_and_an_objective(cli):
    neither = cli("run")
    both = cli("run", str(PLAN), "-o", "reconcile invoices")
    assert neither.exit_code == 2 and both.exit_code == 2  # refused: nothing ran
    assert "give a plan file or an objective (exactly one)" in neither.output
    assert "exactly one" in both.output


def test_run_an_objective_with_inputs_through_the_model(cli, tmp_path, monkeypatch):
    """`forge run "OBJECTIVE" --input NAME=PATH`, the Anthropic SDK pointed at a local server."""
    from activities.models.script import Script
    from tests.support.messages_server import MessagesServer
    from tests.workflows.test_model_runs import OBJECTIVE, SALES, SCRIPT

    sales = tmp_path / "sales.csv"
    sales.write_text(SALES)
    fallbacks = [
        {
            "when": {"consumer": c},
            "times": 0,
            "response": {"content": [{"type": "text", "text": '{"steps": []}'}]},
        }
        for c in ("resolver", "skill_resolver")
    ]
    with MessagesServer(Script.from_data({"responses": [*SCRIPT, *fallbacks]})) as server:
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-cli")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.base_url)
        ran = cli("run", OBJECTIVE, "--input", f"sales={sales}")
    assert ran.exit_code == 0, ran.output
    assert "totals" in ran.output and "summary" in ran.output
    run_id = _run_id(ran.output)
    dest = tmp_path / "totals.csv"
    got = cli("artifacts", "get", run_id, "output/totals.csv", "-o", dest)
    assert got.exit_code == 0 and "north,12.75" in dest.read_text()
    events = cli("events", "list", "--run", run_id, "--limit", "500")
    assert "plan.drafted.v1" in events.output and "evaluation.proof.v1" in events.output
