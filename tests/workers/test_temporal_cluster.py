"""Forge on any Temporal cluster (issue 36 §1): mutual TLS, an API key, an unreachable address.

Each test puts a real edge on loopback in front of the session's real dev server (a
TLS-terminating proxy, a recording gRPC proxy) and runs the real client: `open_client` as the
worker and the CLI use it, and `forge runs` through typer's CliRunner, whose failures must be
one line naming the address and how Forge tried to reach it.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from uuid import uuid4

import grpc
import pytest
from temporalio.client import WorkflowExecutionStatus

from tests.support.temporal_config import write_profile
from tests.support.temporal_proxies import (
    free_port_address,
    grpc_proxy,
    silent_listener,
    tls_proxy,
)
from tests.support.tls import LocalCertificates, make_certificates
from workers.services.temporal_connect import open_client
from workers.settings import Settings

API_KEY = "forge-test-key-7f3a9c"


@pytest.fixture
def upstream(temporal_env) -> str:
    address: str = temporal_env.client.service_client.config.target_host
    return address


@pytest.fixture
def certs(tmp_path: Path) -> LocalCertificates:
    (tmp_path / "ca").mkdir()
    return make_certificates(tmp_path / "ca", ["localhost"])


@pytest.fixture
def edge_tls(certs: LocalCertificates) -> grpc.ServerCredentials:
    """TLS for a gRPC edge in front of Temporal, with the server certificate `certs` issued."""
    return grpc.ssl_server_credentials(
        [(certs.server_key.read_bytes(), certs.server_cert.read_bytes())]
    )


def _one_line(result) -> str:
    lines = result.output.strip().splitlines()
    assert result.exit_code == 2, result.output
    assert len(lines) == 1, result.output
    assert "Traceback" not in result.output
    return lines[0]


def _start_and_describe(settings: Settings) -> WorkflowExecutionStatus | None:
    """Start a workflow (no worker needs to run it) and describe it, through `settings`."""

    async def go() -> WorkflowExecutionStatus | None:
        client = await open_client(settings)
        handle = await client.start_workflow(
            "NoWorkerRunsThis", id=f"cluster-{uuid4()}", task_queue=f"test-{uuid4()}"
        )
        try:
            return (await handle.describe()).status
        finally:
            await handle.terminate(reason="test done")

    return asyncio.run(go())


def _tls_env(monkeypatch, address: str, ca: Path, pair: tuple[Path, Path] | None) -> None:
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", address)
    monkeypatch.setenv("FORGE_TEMPORAL_TLS_CA", str(ca))
    monkeypatch.setenv("FORGE_TEMPORAL_TLS_SERVER_NAME", "localhost")
    if pair is not None:
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_CERT", str(pair[0]))
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_KEY", str(pair[1]))


def test_a_client_certificate_from_the_ca_reaches_temporal_through_mutual_tls(
    cli, upstream, certs, tmp_path, monkeypatch
):
    pair = certs.issue_client(tmp_path / "ca", "forge-worker")
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        _tls_env(monkeypatch, proxy.address, certs.ca_file(tmp_path), pair)
        settings = Settings.from_env()
        assert settings.temporal_tls_on and settings.temporal_tls_cert == pair[0]
        assert _start_and_describe(settings) == WorkflowExecutionStatus.RUNNING
        listed = cli("runs")
        assert listed.exit_code == 0, listed.output
        # The table `forge runs` prints only once Temporal answered its list: title, then header.
        lines = [line.strip() for line in listed.output.splitlines()]
        assert lines[0] == "runs", listed.output
        assert all(col in lines[2] for col in ("run", "status", "started", "closed")), lines
    assert proxy.refused == []


def test_inline_pem_from_temporals_data_variables_reaches_temporal_through_mutual_tls(
    cli, upstream, certs, tmp_path, monkeypatch
):
    # TEMPORAL_TLS_*_DATA carry the PEM text itself (a secret store's env injection, no files).
    cert, key = certs.issue_client(tmp_path / "ca", "forge-worker")
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        monkeypatch.setenv("TEMPORAL_ADDRESS", proxy.address)
        monkeypatch.delenv("FORGE_TEMPORAL_ADDRESS", raising=False)
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "localhost")
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_DATA", certs.ca_pem)
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_CERT_DATA", cert.read_text(encoding="ascii"))
        monkeypatch.setenv("TEMPORAL_TLS_CLIENT_KEY_DATA", key.read_text(encoding="ascii"))
        settings = Settings.from_env()
        assert settings.temporal_tls_cert == cert.read_bytes()
        assert "PRIVATE KEY" not in repr(settings)
        assert _start_and_describe(settings) == WorkflowExecutionStatus.RUNNING
        listed = cli("runs")
        assert listed.exit_code == 0, listed.output
    assert proxy.refused == []


@pytest.mark.parametrize("client", ["another CA's certificate", "no certificate"])
def test_a_client_the_ca_did_not_certify_is_refused_with_one_line(
    cli, upstream, certs, tmp_path, monkeypatch, client
):
    pair = None
    if client == "another CA's certificate":
        (tmp_path / "other").mkdir()
        other = make_certificates(tmp_path / "other", ["localhost"])
        pair = other.issue_client(tmp_path / "other", "intruder")
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        _tls_env(monkeypatch, proxy.address, certs.ca_file(tmp_path), pair)
        monkeypatch.setenv("FORGE_TEMPORAL_CONNECT_TIMEOUT", "120")
        line = _one_line(cli("runs"))
    assert proxy.refused, "the proxy never saw a handshake to refuse"
    assert line.startswith("error: TEMPORAL_UNREACHABLE: ")
    assert f"Temporal at {proxy.address} (TLS with CA " in line
    # Refused, not left waiting: the message says what happened before any timeout.
    assert "the server closed the TLS connection at the first call: it refused the client " in line


def test_the_api_key_reaches_the_server_as_a_bearer_authorization_header(
    cli, upstream, certs, edge_tls, tmp_path, monkeypatch
):
    with grpc_proxy(upstream, API_KEY, edge_tls) as proxy:
        monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", proxy.address)
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_CA", str(certs.ca_file(tmp_path)))
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_SERVER_NAME", "localhost")
        monkeypatch.setenv("FORGE_TEMPORAL_API_KEY", API_KEY)
        listed = cli("runs")
        assert listed.exit_code == 0, listed.output
        assert _start_and_describe(Settings.from_env()) == WorkflowExecutionStatus.RUNNING
    methods = {method.rsplit("/", 1)[1] for method, _ in proxy.calls}
    assert {"GetSystemInfo", "ListWorkflowExecutions", "StartWorkflowExecution"} <= methods
    assert all(md.get("authorization") == f"Bearer {API_KEY}" for _, md in proxy.calls)
    assert API_KEY not in listed.output


def test_temporals_own_variables_carry_the_api_key_and_tls(
    cli, upstream, certs, edge_tls, tmp_path, monkeypatch
):
    with grpc_proxy(upstream, API_KEY, edge_tls) as proxy:
        monkeypatch.delenv("FORGE_TEMPORAL_ADDRESS")
        monkeypatch.setenv("TEMPORAL_ADDRESS", proxy.address)
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_CA_CERT_PATH", str(certs.ca_file(tmp_path)))
        monkeypatch.setenv("TEMPORAL_TLS_SERVER_NAME", "localhost")
        monkeypatch.setenv("TEMPORAL_API_KEY", API_KEY)
        listed = cli("runs")
    assert listed.exit_code == 0, listed.output
    assert proxy.calls and all(
        md.get("authorization") == f"Bearer {API_KEY}" for _, md in proxy.calls
    )


def test_a_wrong_api_key_is_refused_with_one_line_that_never_shows_it(
    cli, upstream, certs, edge_tls, tmp_path, monkeypatch
):
    with grpc_proxy(upstream, API_KEY, edge_tls) as proxy:
        monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", proxy.address)
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_CA", str(certs.ca_file(tmp_path)))
        monkeypatch.setenv("FORGE_TEMPORAL_TLS_SERVER_NAME", "localhost")
        monkeypatch.setenv("FORGE_TEMPORAL_API_KEY", "a-stale-key-0000")
        line = _one_line(cli("runs"))
    assert proxy.calls, "the call never reached the proxy"
    assert proxy.calls[0][1]["authorization"] == "Bearer a-stale-key-0000"
    assert line.startswith("error: TEMPORAL_UNREACHABLE: ")
    assert f"Temporal at {proxy.address} (TLS with CA " in line
    assert "an API key) refused the credentials: UNAUTHENTICATED" in line
    assert "a-stale-key-0000" not in line


def test_an_address_that_never_answers_fails_within_its_timeout_naming_it(cli, monkeypatch):
    with silent_listener() as address:
        monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", address)
        monkeypatch.setenv("FORGE_TEMPORAL_CONNECT_TIMEOUT", "0.5")
        line = _one_line(cli("runs"))
    assert line.startswith(
        f"error: TEMPORAL_UNREACHABLE: Temporal at {address} (plain TCP, no TLS) did not answer "
        "within 0.5 s"
    )
    assert "FORGE_TEMPORAL_CONNECT_TIMEOUT" in line


def test_a_refused_connection_names_the_address(cli, monkeypatch):
    address = free_port_address()
    monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", address)
    line = _one_line(cli("runs"))
    assert line.startswith(
        f"error: TEMPORAL_UNREACHABLE: cannot connect to Temporal at {address} (plain TCP, no "
        "TLS): connection refused"
    )


def test_a_server_certificate_from_another_ca_is_named_as_such(
    cli, upstream, certs, tmp_path, monkeypatch
):
    (tmp_path / "other").mkdir()
    trusted = make_certificates(tmp_path / "other", ["localhost"]).ca_file(tmp_path / "other")
    pair = certs.issue_client(tmp_path / "ca", "forge-worker")
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        _tls_env(monkeypatch, proxy.address, trusted, pair)
        line = _one_line(cli("runs"))
    assert line.startswith(
        f"error: TEMPORAL_UNREACHABLE: cannot connect to Temporal at {proxy.address}"
    )
    assert "the server's certificate is not signed by the CA Forge trusts" in line


def test_a_temporal_toml_profile_carries_address_tls_and_api_key(
    cli, upstream, certs, edge_tls, tmp_path, monkeypatch
):
    with grpc_proxy(upstream, API_KEY, edge_tls) as proxy:
        profile = write_profile(
            tmp_path,
            f'[profile.edge]\naddress = "{proxy.address}"\napi_key = "{API_KEY}"\n'
            f'[profile.edge.tls]\nserver_name = "localhost"\n'
            f'server_ca_cert_path = "{certs.ca_file(tmp_path)}"\n',
        )
        monkeypatch.delenv("FORGE_TEMPORAL_ADDRESS")
        monkeypatch.setenv("TEMPORAL_CONFIG_FILE", str(profile))
        monkeypatch.setenv("TEMPORAL_PROFILE", "edge")
        listed = cli("runs")
    assert listed.exit_code == 0, listed.output
    assert proxy.calls and all(
        md.get("authorization") == f"Bearer {API_KEY}" for _, md in proxy.calls
    )


def test_a_tls_frontend_reached_in_plain_tcp_says_to_turn_tls_on(cli, upstream, certs, monkeypatch):
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        monkeypatch.setenv("FORGE_TEMPORAL_ADDRESS", proxy.address)
        line = _one_line(cli("runs"))
    assert proxy.refused, "the proxy never saw a handshake to refuse"
    assert line.startswith(
        f"error: TEMPORAL_UNREACHABLE: cannot connect to Temporal at {proxy.address} (plain TCP, "
        "no TLS): the server closed the connection at the first call: if it expects TLS, set "
        "FORGE_TEMPORAL_TLS=true"
    )


@pytest.mark.parametrize("client", ["the CA's certificate", "another CA's certificate"])
def test_forge_doctor_checks_tls_and_auth_with_forges_tls_settings(
    cli, upstream, certs, tmp_path, monkeypatch, client
):
    """`forge doctor`'s Temporal checks connect with the same settings: ✓ with a certificate
    the frontend accepts, ✗ naming TLS (not "unreachable") with one it refuses."""
    from workers.services.doctor_temporal import AUTH, REACHABLE, temporal_checks

    issuer = certs
    if client == "another CA's certificate":
        (tmp_path / "other").mkdir()
        issuer = make_certificates(tmp_path / "other", ["localhost"])
    pair = issuer.issue_client(tmp_path / "ca", "forge-worker")
    with tls_proxy(upstream, certs.mutual_server_context()) as proxy:
        _tls_env(monkeypatch, proxy.address, certs.ca_file(tmp_path), pair)
        # Generous, so the ✓ case holds on a loaded machine.
        monkeypatch.setenv("FORGE_TEMPORAL_CONNECT_TIMEOUT", "60")
        checks = {c.name: c for c in asyncio.run(temporal_checks(Settings.from_env()))}
    assert checks[REACHABLE].ok
    if client == "the CA's certificate":
        assert checks[AUTH].ok
        assert checks[AUTH].detail == (
            f"connected to {proxy.address} (TLS); the server accepted the connection"
        )
        assert all(c.ok for c in checks.values()), checks
    else:
        assert not checks[AUTH].ok
        assert "TLS" in checks[AUTH].detail and "plain text" not in checks[AUTH].detail
        assert "FORGE_TEMPORAL_TLS_CERT" in (checks[AUTH].fix or "")
