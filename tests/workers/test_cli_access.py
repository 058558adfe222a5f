"""`forge tenants`, `forge keys` and `forge api` as a user runs them."""

import json
import os
import re
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from typer.testing import CliRunner

from activities.store.access import open_access_store
from workers.cli import app
from workers.settings import Settings


def forge(*args: str):
    return CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})


def test_a_tenant_and_its_keys_from_creation_to_revocation(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    assert forge("tenants", "create", "acme").exit_code == 0
    again = forge("tenants", "create", "acme")
    assert again.exit_code == 2 and "TENANT_INVALID: tenant 'acme' exists already" in again.output
    made = forge(
        "keys",
        "create",
        "--tenant",
        "acme",
        "--role",
        "approver",
        "--name",
        "fin",
        "--gate-role",
        "finance",
    )
    assert made.exit_code == 0, made.output
    token = re.search(r"fk_[0-9a-f]{12}_[A-Za-z0-9_-]{43}", made.output)[0]
    prefix = token[:15]
    with open_access_store(Settings.from_env().database_url) as access:
        key = access.authenticate(token)
    assert (key.tenant_id, key.role, key.gate_roles, key.actor.id) == (
        "acme",
        "approver",
        ["finance"],
        "fin",
    )
    listed = forge("keys", "list", "--tenant", "acme")
    assert prefix in listed.output and token not in listed.output and "live" in listed.output
    assert "1" in forge("tenants", "list").output
    assert forge("keys", "revoke", prefix, "--tenant", "acme").exit_code == 0
    assert "revoked" in forge("keys", "list", "--tenant", "acme").output
    other = forge("keys", "revoke", prefix, "--tenant", "default")
    assert other.exit_code == 2 and "has no key" in other.output


def test_the_default_tenant_exists_from_the_first_command(tmp_path, monkeypatch):
    """Every run is the default tenant's: keys for it need no `tenants create` (issue 34 §6)."""
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    made = forge("keys", "create", "--role", "viewer")
    assert made.exit_code == 0, made.output
    assert "default" in forge("tenants", "list").output
    again = forge("tenants", "create", "default")
    assert again.exit_code == 2 and "exists already" in again.output


def test_bad_key_options_are_one_line_and_exit_2(tmp_path, monkeypatch):
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    role = forge("keys", "create", "--tenant", "acme", "--role", "root")
    assert role.exit_code == 2 and "--role 'root': use one of admin" in role.output
    tenant = forge("keys", "create", "--tenant", "nobody", "--role", "viewer")
    assert tenant.exit_code == 2 and "no tenant 'nobody'" in tenant.output
    assert len(tenant.output.strip().splitlines()) == 1


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_forge_api_serves_openapi_docs_and_problem_json(temporal_env, tmp_path):
    port = _free_port()
    env = {
        **os.environ,
        "FORGE_HOME": str(tmp_path / "home"),
        "FORGE_TEMPORAL_ADDRESS": temporal_env.client.service_client.config.target_host,
    }
    server = subprocess.Popen(
        [str(Path(sys.executable).parent / "forge"), "api", "--port", str(port)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120  # a loaded machine starts it slowly
        while True:
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2) as ok:
                    assert json.load(ok) == {"status": "ok"}
                break
            except (urllib.error.URLError, ConnectionError):
                assert server.poll() is None, server.communicate()
                assert time.monotonic() < deadline, "forge api did not answer /healthz"
                time.sleep(0.1)
        with urllib.request.urlopen(f"{base}/openapi.json") as spec:
            paths = json.load(spec)["paths"]
        assert "/v1/runs" in paths and "/v1/gates/{gate}/decision" in paths
        try:
            urllib.request.urlopen(f"{base}/v1/runs")
            raise AssertionError("an anonymous request was answered")
        except urllib.error.HTTPError as refused:
            assert refused.code == 401
            assert refused.headers["content-type"] == "application/problem+json"
            assert json.load(refused)["code"] == "UNAUTHENTICATED"
    finally:
        server.terminate()
        out, err = server.communicate(timeout=30)
    assert "Forge API on http://127.0.0.1" in out
    assert "Traceback" not in err
