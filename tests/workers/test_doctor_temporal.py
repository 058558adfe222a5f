"""`forge doctor`'s Temporal checks, each failure on a real server: a dead port, a TLS-only
frontend, a gRPC frontend that refuses the credentials, a namespace missing or unprepared."""

from __future__ import annotations

import asyncio
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import grpc
import grpc.aio
from google.protobuf.duration_pb2 import Duration
from temporalio.api.workflowservice.v1 import RegisterNamespaceRequest
from temporalio.testing import WorkflowEnvironment

from schemas.doctor import DoctorCheck
from tests.support.tls import make_certificates
from workers.services.doctor_temporal import AUTH, NAMESPACE, REACHABLE, temporal_checks
from workers.settings import Settings


def _address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


def _dead_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


async def _checks(
    tmp_path: Path, address: str, namespace: str = "default", timeout_s: float = 60
) -> list[DoctorCheck]:
    settings = Settings(
        home=tmp_path / "home",
        temporal_address=address,
        namespace=namespace,
        temporal_connect_timeout=timeout_s,  # generous: a loaded machine still answers in time
    )
    return await temporal_checks(settings)


def _by_name(checks: list[DoctorCheck]) -> dict[str, DoctorCheck]:
    assert [c.name for c in checks] == [REACHABLE, AUTH, NAMESPACE]
    return {c.name: c for c in checks}


async def test_a_prepared_cluster_passes_all_three(temporal_env, tmp_path):
    checks = _by_name(await _checks(tmp_path, _address(temporal_env)))
    assert all(c.ok for c in checks.values()), checks
    assert "(plain text)" in checks[AUTH].detail
    assert checks[NAMESPACE].detail == "namespace 'default' exists and has ForgeTenant (Keyword)"


async def test_a_dead_port_is_unreachable_and_nothing_else_is_checked(tmp_path):
    address = f"127.0.0.1:{_dead_port()}"
    checks = _by_name(await _checks(tmp_path, address))
    assert not checks[REACHABLE].ok
    assert checks[REACHABLE].detail == (
        f"cannot reach {address}: connection refused (nothing listens there)"
    )
    assert "FORGE_TEMPORAL_ADDRESS" in (checks[REACHABLE].fix or "")
    for name in (AUTH, NAMESPACE):
        assert not checks[name].ok
        assert checks[name].detail == "not checked: Temporal is not reachable"


async def test_a_namespace_without_the_tenant_attribute_fails(temporal_env, tmp_path):
    namespace = f"doctor-{uuid.uuid4().hex[:8]}"
    await temporal_env.client.workflow_service.register_namespace(
        RegisterNamespaceRequest(
            namespace=namespace, workflow_execution_retention_period=Duration(seconds=86400)
        )
    )  # registered by hand, as on a cluster nobody prepared for Forge
    checks = _by_name(await _checks(tmp_path, _address(temporal_env), namespace))
    assert checks[REACHABLE].ok and checks[AUTH].ok
    check = checks[NAMESPACE]
    assert not check.ok
    assert check.detail == (
        f"namespace {namespace!r} has no search attribute ForgeTenant (Keyword), which every "
        "Forge workflow carries"
    )
    assert check.fix is not None
    assert f"search-attribute create --namespace {namespace} --name ForgeTenant" in check.fix


async def test_an_unknown_host_is_unreachable(tmp_path):
    checks = _by_name(await _checks(tmp_path, "temporal.invalid:7233"))
    assert not checks[REACHABLE].ok
    assert checks[REACHABLE].detail.startswith(
        "cannot reach temporal.invalid:7233: the host name does not resolve"
    )


async def test_a_missing_namespace_fails(temporal_env, tmp_path):
    checks = _by_name(await _checks(tmp_path, _address(temporal_env), "no-such-namespace"))
    check = checks[NAMESPACE]
    assert not check.ok
    assert check.detail.startswith("namespace 'no-such-namespace' does not exist at ")
    assert "FORGE_NAMESPACE" in (check.fix or "")


@asynccontextmanager
async def _tls_only_server(tmp_path: Path) -> AsyncIterator[str]:
    """A frontend that speaks only TLS (a TLS-terminating proxy, say), on loopback."""
    certificates = make_certificates(tmp_path, ["localhost"])

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read(1)  # the client's first bytes, or its close
        writer.close()

    server = await asyncio.start_server(
        hold, "127.0.0.1", 0, ssl=certificates.server_context(), ssl_handshake_timeout=30
    )
    async with server:
        yield f"127.0.0.1:{server.sockets[0].getsockname()[1]}"


async def test_a_tls_frontend_reached_in_plain_text_fails_as_tls(tmp_path):
    async with _tls_only_server(tmp_path) as address:
        checks = _by_name(await _checks(tmp_path, address))
    assert checks[REACHABLE].ok  # the port answers: it is the handshake that fails
    check = checks[AUTH]
    assert not check.ok
    assert check.detail == (
        f"{address} speaks TLS and Forge connected in plain text: the server closed the connection"
    )
    assert "TLS settings" in (check.fix or "")
    assert checks[NAMESPACE].detail == "not checked: no connection to Temporal"


async def test_a_silent_frontend_fails_within_the_configured_connect_timeout(tmp_path):
    """The doctor waits FORGE_TEMPORAL_CONNECT_TIMEOUT for Temporal, as every verb does, and
    says so: a port that accepts and never answers (a proxy with nothing behind it)."""
    accepted: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        accepted.append(writer)
        await reader.read()  # until the client gives up and closes

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    address = f"127.0.0.1:{server.sockets[0].getsockname()[1]}"
    async with server:
        checks = _by_name(await _checks(tmp_path, address, timeout_s=1.5))
        for writer in accepted:
            writer.close()
    assert checks[REACHABLE].ok
    check = checks[AUTH]
    assert not check.ok
    assert check.detail == (
        f"{address} accepted a connection but Temporal did not answer within 1.5 s"
    )
    assert "FORGE_TEMPORAL_CONNECT_TIMEOUT" in (check.fix or "")
    assert checks[NAMESPACE].detail == "not checked: no connection to Temporal"


class _RefuseAll(grpc.GenericRpcHandler):
    """Every call refused as a cluster refuses a wrong API key."""

    def service(self, handler_call_details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        async def refuse(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            await context.abort(grpc.StatusCode.UNAUTHENTICATED, "invalid API key")

        return grpc.unary_unary_rpc_method_handler(refuse)


async def test_a_frontend_that_refuses_the_credentials_fails_as_auth(tmp_path):
    server = grpc.aio.server()
    server.add_generic_rpc_handlers((_RefuseAll(),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    try:
        checks = _by_name(await _checks(tmp_path, f"127.0.0.1:{port}"))
    finally:
        await server.stop(None)
    assert checks[REACHABLE].ok
    check = checks[AUTH]
    assert not check.ok
    assert check.detail.startswith(f"127.0.0.1:{port} refused Forge's credentials: ")
    assert "invalid API key" in check.detail
    assert "API key" in (check.fix or "")


async def test_a_refused_tls_handshake_is_told_apart_from_an_unreachable_server(tmp_path):
    """The words the SDK's core uses for a failed handshake (a CA the client does not trust)
    are what the check recognises: the error comes from a real TLS client, not a made-up one.
    (Forge's TLS settings drive connect_reader; here the SDK's own `tls=True` stands in.)"""
    from temporalio.client import Client

    from workers.services.doctor_temporal import _connect_failure

    async with _tls_only_server(tmp_path) as address:
        try:
            await asyncio.wait_for(Client.connect(address, tls=True), 30)
        except RuntimeError as exc:
            refused: RuntimeError = exc
        else:
            raise AssertionError("a certificate from an untrusted CA was accepted")
        check = await _connect_failure(refused, address, "default", 30)
    assert not check.ok
    assert check.detail.startswith(f"the TLS handshake with {address} failed: ")
    assert "TLS settings" in (check.fix or "")
