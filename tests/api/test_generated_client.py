"""A client generated from Forge's own /openapi.json by a standard generator
(openapi-python-client, installed by `make test` from its hashed lock) drives a run and a gate
decision: what the schema publishes is what the server does."""

import asyncio
import importlib
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from tests.workflows.test_gates import gated_plan

ROOT = Path(__file__).resolve().parents[2]
GENERATOR = ROOT / ".tools" / "openapi-client" / "bin" / "openapi-python-client"


def generate(spec: Path, out: Path) -> None:
    assert GENERATOR.exists(), f"{GENERATOR} is missing: `make test` installs it"
    env = {**os.environ, "PATH": f"{GENERATOR.parent}:{os.environ['PATH']}"}
    subprocess.run(
        [str(GENERATOR), "generate", "--path", str(spec), "--output-path", str(out)]
        + ["--meta", "none", "--fail-on-warning"],
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=300,
    )


def drive(package: str, url: str, operator: str, approver: str) -> dict[str, Any]:
    """What a service would do with the generated client: start, wait at the gate, approve."""
    client_mod = importlib.import_module(package)
    start_run = importlib.import_module(f"{package}.api.runs.start_run")
    get_run = importlib.import_module(f"{package}.api.runs.get_run")
    inbox = importlib.import_module(f"{package}.api.gates.inbox")
    decide = importlib.import_module(f"{package}.api.gates.decide")
    models = importlib.import_module(f"{package}.models")
    ops = client_mod.AuthenticatedClient(base_url=url, token=operator, timeout=60.0)
    boss = client_mod.AuthenticatedClient(base_url=url, token=approver, timeout=60.0)
    with ops, boss:
        body = models.RunRequest.from_dict({"plan": gated_plan()})
        started = start_run.sync_detailed(client=ops, body=body, idempotency_key="gen-1")
        assert started.status_code == 201, started.content
        run_id = started.parsed.run_id
        for _ in range(600):
            gates = inbox.sync(client=boss, run_id=run_id).gates
            if gates:
                break
            time.sleep(0.1)
        gate = gates[0]
        decision = models.DecisionRequest.from_dict(
            {
                "decision": "approve",
                "contract_hash": gate.contract_hash,
                "comment": "approved by a generated client",
            }
        )
        decided = decide.sync_detailed(gate=gate.gate, client=boss, body=decision)
        assert decided.status_code == 200, decided.content
        stale = decide.sync_detailed(gate=gate.gate, client=boss, body=decision)
        assert stale.status_code == 409 and stale.parsed.code == "DECISION_REFUSED"
        for _ in range(600):
            detail = get_run.sync(run_id=run_id, client=ops)
            if detail.workflow_status != "RUNNING":
                return {"run_id": run_id, "status": detail.status, "actor": decided.parsed.actor.id}
            time.sleep(0.1)
        raise AssertionError("the run did not finish")


async def test_a_generated_client_drives_a_run_and_a_gate_decision(api, tmp_path):
    async with api.anonymous() as http:
        spec = tmp_path / "openapi.json"
        spec.write_text((await http.get("/openapi.json")).text)
    package = f"forge_client_{tmp_path.name.replace('-', '_')}"
    await asyncio.to_thread(generate, spec, tmp_path / package)
    sys.path.insert(0, str(tmp_path))
    try:
        outcome = await asyncio.to_thread(
            drive,
            package,
            api.url,
            api.tokens["acme", "operator"],
            api.tokens["acme", "approver"],
        )
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith(package)]:
            del sys.modules[name]
    assert outcome["status"] == "completed" and outcome["actor"] == "acme-approver"
