"""`forge dev up --workers 2 --postgres --s3 --api` as real processes, end to end.

The CLI runs as a subprocess, as a user runs it; a run POSTed to the API with an operator key
completes on the worker processes, its events in PostgreSQL and its artifact in the S3 server;
`forge dev down` then leaves none of the recorded pids alive.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psycopg
import pytest

from activities.store.artifacts_s3 import s3_client
from tests.support.topology import (
    clean_env,
    dev_topology,
    exported,
    forge,
    operator_token,
    processes_of,
)
from tests.workflows.plans import code_step, plan
from workers.process.procs import alive

EVERY_PROCESS = ["temporal", "postgres", "s3", "api", "worker-1", "worker-2"]
WRITE = "open('output/answer.json', 'w').write('{\"answer\": 42}')"


@pytest.fixture
def home_env() -> Iterator[dict[str, str]]:
    with clean_env() as env:
        yield env


async def _run_plan(api: str, token: str) -> dict:
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(base_url=api, headers=headers, timeout=60) as http:
        body = {"plan": plan(code_step("answer", WRITE, ["output/answer.json"]))}
        started = await http.post("/v1/runs", json=body)
        assert started.status_code == 201, started.text
        run_id = started.json()["run_id"]
        for _ in range(1200):
            detail = (await http.get(f"/v1/runs/{run_id}")).json()
            if detail["workflow_status"] != "RUNNING":
                break
            await asyncio.sleep(0.25)
        got = await http.get(f"/v1/runs/{run_id}/artifacts/output/answer.json")
        return {"run_id": run_id, "detail": detail, "artifact": got}


@pytest.mark.timeout(900)
def test_the_topology_runs_a_plan_from_the_api_and_down_leaves_nothing(
    home_env: dict[str, str],
) -> None:
    up = forge(home_env, "dev", "up", "--workers", "2", "--postgres", "--s3", "--api")
    assert up.returncode == 0, up.stdout + up.stderr
    assert "topology ready: 2 worker(s), postgres, s3, api" in up.stdout

    status = forge(home_env, "dev", "status", "--json")
    assert status.returncode == 0, status.stdout + status.stderr
    state = json.loads(status.stdout)
    assert state["running"] is True
    assert [p["name"] for p in state["processes"]] == EVERY_PROCESS
    assert all(p["healthy"] and p["alive"] for p in state["processes"]), state
    pids = [p["pid"] for p in state["processes"]]
    assert all(isinstance(pid, int) and alive(pid) for pid in pids)
    ports = {p["name"]: p["port"] for p in state["processes"]}
    workers = [p for p in state["processes"] if p["kind"] == "worker"]
    assert all(p["probe"] == "polling forge" for p in workers)

    # The variables the processes got, as `forge dev env` exports them; status hides passwords.
    topo = exported(home_env)
    shown = state["environment"]
    roles = {"FORGE_DATABASE_URL": "forge_app", "FORGE_DATABASE_OWNER_URL": "forge_owner"}
    for name, role in roles.items():
        url = urlsplit(topo[name])
        assert (url.scheme, url.username, url.port) == (
            "postgresql+psycopg",
            role,
            ports["postgres"],
        )
        assert url.password and len(url.password) >= 24
        assert shown[name] == topo[name].replace(url.password, "***")
        assert url.password not in status.stdout + up.stdout
    assert topo["FORGE_ARTIFACTS_URL"] == "s3://forge-artifacts/artifacts/"
    assert topo["FORGE_S3_ENDPOINT"] == f"http://127.0.0.1:{ports['s3']}"
    assert topo["FORGE_TEMPORAL_ADDRESS"] == f"127.0.0.1:{ports['temporal']}"
    assert shown["AWS_SECRET_ACCESS_KEY"] == "***"
    # The cluster asks for passwords: no role gets in without one, the superuser included.
    for role in ("postgres", "forge_owner", "forge_app"):
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(host="127.0.0.1", port=ports["postgres"], user=role, dbname="forge")
    token = operator_token({**home_env, **topo})

    ran = asyncio.run(_run_plan(f"http://127.0.0.1:{ports['api']}", token))
    assert ran["detail"]["status"] == "completed", ran["detail"]
    assert ran["artifact"].status_code == 200
    assert json.loads(ran["artifact"].content) == {"answer": 42}

    # The run's events are in PostgreSQL, its artifact in the S3 server's bucket.
    with psycopg.connect(topo["FORGE_DATABASE_OWNER_URL"].replace("+psycopg", "")) as conn:
        row = conn.execute(
            "SELECT count(*) FROM events WHERE run_id = %s AND tenant_id = 'acme'",
            (ran["run_id"],),
        ).fetchone()
    assert row is not None and row[0] > 0
    s3 = s3_client(
        topo["FORGE_S3_ENDPOINT"],
        aws_access_key_id=topo["AWS_ACCESS_KEY_ID"],
        aws_secret_access_key=topo["AWS_SECRET_ACCESS_KEY"],
        region_name=topo["AWS_DEFAULT_REGION"],
    )
    listed = s3.list_objects_v2(Bucket="forge-artifacts", Prefix="artifacts/")
    digest = hashlib.sha256(ran["artifact"].content).hexdigest()
    assert any(o["Key"].endswith(digest[2:]) for o in listed.get("Contents", [])), listed

    down = forge(home_env, "dev", "down", timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    for name in EVERY_PROCESS:
        assert f"✓ {name} stopped" in down.stdout
    assert [pid for pid in pids if alive(pid)] == []
    assert processes_of(home_env["FORGE_HOME"]) == []
    # The workers stopped on SIGINT as on Ctrl-C, not by SIGKILL after the grace period.
    for worker in workers:
        assert Path(worker["log"]).read_text().rstrip().endswith("worker stopped"), worker

    after = forge(home_env, "dev", "status", "--json")
    assert after.returncode == 1
    assert json.loads(after.stdout)["running"] is False
    plain = forge(home_env, "dev", "status")
    assert plain.returncode == 1 and "not running" in plain.stdout


@pytest.mark.timeout(600)
def test_a_worker_that_cannot_start_fails_up_and_leaves_nothing_running(
    home_env: dict[str, str],
) -> None:
    # The worker, not this CLI, checks its workspace root: open to others, it refuses to start.
    workspaces = Path(tempfile.mkdtemp(prefix="forge-ws-", dir="/var/tmp"))
    workspaces.chmod(0o755)
    env = {**home_env, "FORGE_WORKSPACE_ROOT": str(workspaces), "COLUMNS": "300"}
    try:
        up = forge(env, "dev", "up", "--workers", "1")
    finally:
        shutil.rmtree(workspaces, ignore_errors=True)
    assert up.returncode == 2, up.stdout + up.stderr
    last = up.stderr.strip().splitlines()[-1]
    assert last.startswith("error: DEV_SERVER: worker-1 (pid "), up.stderr
    assert "exited during startup; see " in last and "worker-1.log" in last
    assert "WORKSPACE_VIOLATION" in up.stderr  # the worker's own line, from its log
    home = Path(home_env["FORGE_HOME"])
    assert not (home / "topology.json").exists() and not (home / "devserver.json").exists()
    assert processes_of(str(home)) == []


@pytest.mark.timeout(600)
def test_without_postgres_and_s3_the_processes_share_the_sqlite_store() -> None:
    with dev_topology("--workers", "1", "--api") as topo:
        assert [p["name"] for p in topo.status["processes"]] == ["temporal", "api", "worker-1"]
        home = Path(topo.env["FORGE_HOME"])
        assert topo.env["FORGE_DATABASE_URL"] == f"sqlite:///{home / 'forge.db'}"
        assert topo.env["FORGE_ARTIFACTS_URL"] == str(home / "artifacts")
        ran = asyncio.run(_run_plan(topo.api_url, operator_token(topo.env)))
        assert ran["detail"]["status"] == "completed", ran["detail"]
        assert json.loads(ran["artifact"].content) == {"answer": 42}
        digest = hashlib.sha256(ran["artifact"].content).hexdigest()
        assert any(digest[2:] in str(p) for p in (home / "artifacts").rglob("*") if p.is_file())
