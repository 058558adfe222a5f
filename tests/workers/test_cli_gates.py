"""`forge gates|approve|reject`, and the same decision through the plain `temporal` CLI."""

import asyncio
import json
import subprocess
from pathlib import Path

from schemas.event_catalogue import GATE_REQUESTED
from tests.workflows.engine import engine, wait_for_event
from tests.workflows.test_gates import gated_plan, pending_gate
from workers.process.devserver import find_binary


async def test_inbox_approve_and_refusals_from_the_cli(cli, temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        await pending_gate(handle)
        # A run waiting at a gate: its status says what it waits for and how to decide.
        status = await asyncio.to_thread(cli, "status", handle.id)
        assert status.exit_code == 0, status.output
        assert "awaiting_approval" in status.output and "Traceback" not in status.output
        assert "waiting at gate-ship (step ship) for a decision by role ops" in status.output
        assert f"forge approve {handle.id} gate-ship --as NAME --role ops" in status.output
        inbox = await asyncio.to_thread(cli, "gates")
        assert inbox.exit_code == 0
        assert handle.id in inbox.output and "gate-ship" in inbox.output
        assert "Ship it?" in inbox.output and "output/a.json" in inbox.output
        # Another tenant's inbox does not hold it, and that tenant cannot decide it.
        other = await asyncio.to_thread(cli, "gates", "--tenant", "globex")
        assert other.exit_code == 0 and "no pending gates" in other.output
        decide_as = ["--as", "bo", "--role", "ops", "--reason", "ok", "--tenant", "globex"]
        elsewhere = await asyncio.to_thread(cli, "approve", handle.id, "gate-ship", *decide_as)
        assert elsewhere.exit_code == 2 and "no pending gate" in elsewhere.output
        contract = "sha256:" + "0" * 64
        blind = await asyncio.to_thread(
            cli, "approve", handle.id, "gate-ship", *decide_as, "--contract-hash", contract
        )
        assert blind.exit_code == 2 and "has no gate 'gate-ship'" in blind.output, blind.output
        wrong = await asyncio.to_thread(
            cli,
            "approve",
            handle.id,
            "gate-ship",
            "--as",
            "bo",
            "--role",
            "intern",
            "--reason",
            "looks fine",
        )
        assert wrong.exit_code == 2 and "may not decide" in wrong.output
        assert "nothing changed" in wrong.output and "ValueError" not in wrong.output
        assert len(wrong.output.strip().splitlines()) <= 2  # the refusal, and what to do
        unknown = await asyncio.to_thread(
            cli, "approve", handle.id, "gate-x", "--as", "bo", "--role", "ops", "--reason", "ok"
        )
        assert unknown.exit_code == 2 and "no pending gate" in unknown.output
        ok = await asyncio.to_thread(
            cli,
            "approve",
            handle.id,
            "gate-ship",
            "--as",
            "ana",
            "--role",
            "ops",
            "--reason",
            "evidence checked",
        )
        assert ok.exit_code == 0 and "approve by ana (ops)" in ok.output
        result = await handle.result()
    assert result.status == "completed"
    assert "no pending gates" in (await asyncio.to_thread(cli, "gates")).output


async def test_reject_with_request_changes(cli, temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        await pending_gate(handle)
        done = await asyncio.to_thread(
            cli,
            "reject",
            handle.id,
            "gate-ship",
            "--as",
            "ana",
            "--role",
            "ops",
            "--reason",
            "split the batch",
            "--request-changes",
        )
        assert done.exit_code == 0
        result = await handle.result()
    assert result.steps["ship"].error.failure_class == "GATE_CHANGES_REQUESTED"


def _temporal_update(temporal_env, run_id: str, payload: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            str(find_binary()),
            "workflow",
            "update",
            "execute",
            "--address",
            temporal_env.client.service_client.config.target_host,
            "--namespace",
            "default",
            "--workflow-id",
            run_id,
            "--name",
            "decide_gate",
            "--input",
            json.dumps(payload),
        ],
        capture_output=True,
        text=True,
    )


async def test_a_gate_decided_with_the_plain_temporal_cli(temporal_env, task_queue, tmp_path):
    async with engine(temporal_env, tmp_path / "home", task_queue) as eng:
        handle = await eng.start(gated_plan())
        gate = await pending_gate(handle)
        payload = {
            "gate_id": "gate-ship",
            "decision": "approve",
            "actor": {"id": "ops-bot", "name": "Ops bot", "role": "ops", "kind": "agent"},
            "reason": "approved from a script",
            "contract_hash": gate.spec.contract_hash,
        }
        # Without the contract hash: one clear line naming the field, not pydantic's report.
        unhashed = {k: v for k, v in payload.items() if k != "contract_hash"}
        refused = await asyncio.to_thread(_temporal_update, temporal_env, handle.id, unhashed)
        assert refused.returncode != 0
        assert "invalid DecideGateInput: contract_hash: Field required" in refused.stderr
        assert "pydantic" not in refused.stderr and "http" not in refused.stderr
        assert (await pending_gate(handle)).status == "pending"  # nothing changed
        done = await asyncio.to_thread(_temporal_update, temporal_env, handle.id, payload)
        assert done.returncode == 0, done.stderr
        assert "approve" in done.stdout
        result = await handle.result()
    assert result.status == "completed"
    assert Path(find_binary()).name == "temporal"


async def test_a_decision_no_worker_takes_exits_75_and_the_same_command_succeeds_later(
    cli, temporal_env, task_queue, tmp_path
):
    home = tmp_path / "home"
    async with engine(temporal_env, home, task_queue) as eng:
        handle = await eng.start(gated_plan())
        await wait_for_event(eng.services.events, handle.id, GATE_REQUESTED)  # what approve reads
    approve = ["approve", handle.id, "gate-ship", "--as", "ana", "--role", "ops", "--reason", "ok"]
    waiting = await asyncio.to_thread(cli, *approve)
    assert waiting.exit_code == 75, waiting.output
    lines = waiting.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: WORKER_UNAVAILABLE: "), lines
    assert "nothing was decided" in lines[0]
    assert "gate-ship" in (await asyncio.to_thread(cli, "gates")).output  # still pending
    async with engine(temporal_env, home, task_queue):
        ok = await asyncio.to_thread(cli, *approve)
        assert ok.exit_code == 0 and "approve by ana (ops)" in ok.output, ok.output
        result = await handle.result()
    assert result.status == "completed"
