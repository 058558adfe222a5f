"""`forge doctor`'s Temporal checks: reachable, TLS and credentials accepted, namespace ready.

The checks connect as every read-only verb does (`run_reads.connect_reader`), so whatever
settings shape that connection (address, namespace, TLS, API key) shape the check too. With no
FORGE_TEMPORAL_ADDRESS the embedded dev server is what Forge uses: like every verb, the check
starts it when it is not running, and then checks it the same way.

Every wait (the port, the connection, the TLS probe) is bounded by FORGE_TEMPORAL_CONNECT_TIMEOUT
(`settings.temporal_connect_timeout`), the bound every verb's connection has.

A failed connection is told apart by what failed: nothing listens at the address (reachable),
a TLS handshake failed or the server speaks TLS to a plain-text client (TLS), or the server
refused the credentials (auth). Each is its own ✗ line with its own fix.
"""

from __future__ import annotations

import asyncio
import os
import re
import socket
import ssl
from typing import TYPE_CHECKING

from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest
from temporalio.service import RPCError, RPCStatusCode

from schemas.doctor import DoctorCheck
from schemas.errors import ForgeError
from workers.process.devserver import DevServerError, ensure_address
from workers.services.run_reads import connect_reader, tenant_attribute_fix
from workers.services.temporal_connect import TemporalConnectError
from workflows.policies import TENANT_ATTRIBUTE

if TYPE_CHECKING:
    from temporalio.client import Client

    from workers.settings import Settings

__all__ = ["REACHABLE", "AUTH", "NAMESPACE", "temporal_checks"]

REACHABLE = "temporal.reachable"
AUTH = "temporal.auth"
NAMESPACE = "temporal.namespace"
_REFUSED = (RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.PERMISSION_DENIED)
# How the SDK's core (tonic, rustls) words a refused credential or a failed handshake: its
# connect errors arrive as RuntimeError text, not as typed statuses.
_AUTH_WORDS = re.compile(r"Unauthenticated|PermissionDenied|permission denied", re.IGNORECASE)
_TLS_WORDS = re.compile(
    r"\btls\b|ssl|certificate|handshake|UnknownIssuer|CorruptMessage|InvalidContentType|"
    r"AlertReceived|peer sent",
    re.IGNORECASE,
)
_ADDRESS_FIX = (
    "check FORGE_TEMPORAL_ADDRESS (host:port of the cluster's frontend, usually port 7233) "
    "and that nothing between here and there blocks it; unset it to use the embedded dev server"
)
_TIMEOUT_FIX = "FORGE_TEMPORAL_CONNECT_TIMEOUT sets the wait (seconds)"
_TLS_FIX = (
    "configure Forge's TLS settings for this cluster to match what its frontend requires: "
    "FORGE_TEMPORAL_TLS, FORGE_TEMPORAL_TLS_CA, FORGE_TEMPORAL_TLS_CERT and _KEY, "
    "FORGE_TEMPORAL_TLS_SERVER_NAME (docs/configuration.md#reaching-temporal)"
)
_AUTH_FIX = (
    "check the credentials Forge sends (the API key, or the client certificate's identity) "
    "and that they are allowed on namespace {namespace}"
)


def _check(name: str, detail: str, fix: str | None = None) -> DoctorCheck:
    return DoctorCheck(name=name, ok=fix is None, detail=detail, fix=fix)


def _not_checked(name: str, why: str) -> DoctorCheck:
    return _check(name, f"not checked: {why}", "fix the Temporal check above first")


async def temporal_checks(settings: Settings) -> list[DoctorCheck]:
    """The three Temporal checks, in order; a failed one leaves those after it not checked."""
    timeout_s = settings.temporal_connect_timeout
    reachable, address = await _reachable(settings, timeout_s)
    if not reachable.ok:
        return [
            reachable,
            _not_checked(AUTH, "Temporal is not reachable"),
            _not_checked(NAMESPACE, "Temporal is not reachable"),
        ]
    try:
        client = await connect_reader(settings)  # bounded by the same timeout
    except TemporalConnectError as exc:
        # open_client's one line keeps the SDK's error as its cause: told apart as a raw one.
        cause = exc.__cause__
        if isinstance(cause, RuntimeError | RPCError | TimeoutError):
            failure = await _connect_failure(
                cause, address, settings.namespace, timeout_s, tls=settings.temporal_tls_on
            )
        else:
            failure = _check(AUTH, exc.message, exc.hint)
        return [reachable, failure, _not_checked(NAMESPACE, "no connection to Temporal")]
    except ForgeError as exc:  # the connection's own settings refused (a TLS file unreadable)
        return [
            reachable,
            _check(AUTH, exc.message, exc.hint),
            _not_checked(NAMESPACE, "no connection to Temporal"),
        ]
    except (RuntimeError, RPCError, TimeoutError) as exc:
        return [
            reachable,
            await _connect_failure(exc, address, settings.namespace, timeout_s),
            _not_checked(NAMESPACE, "no connection to Temporal"),
        ]
    config = client.service_client.config
    # The SDK turns TLS on by itself for an API key with TLS left unset.
    tls = bool(config.tls) or (config.tls is None and config.api_key is not None)
    where = "TLS" if tls else "plain text"
    auth = _check(AUTH, f"connected to {address} ({where}); the server accepted the connection")
    return [reachable, auth, await _namespace(client, settings.namespace, address)]


async def _reachable(settings: Settings, timeout_s: float) -> tuple[DoctorCheck, str]:
    if settings.temporal_address is None:
        try:
            address = await ensure_address(settings)
        except DevServerError as exc:
            return _check(REACHABLE, f"the embedded dev server: {exc.message}", exc.hint), ""
        return _check(
            REACHABLE,
            f"the embedded dev server at {address} (FORGE_TEMPORAL_ADDRESS is unset; started "
            f"under {settings.home} if it was not running)",
        ), address
    address = settings.temporal_address
    host, _, port = address.rpartition(":")
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host.strip("[]"), int(port)), timeout_s
        )
    except TimeoutError:
        return _check(
            REACHABLE,
            f"nothing answered at {address} within {timeout_s:g} s",
            f"{_ADDRESS_FIX}; {_TIMEOUT_FIX}",
        ), address
    except OSError as exc:
        return _check(REACHABLE, f"cannot reach {address}: {_why(exc)}", _ADDRESS_FIX), address
    writer.close()
    return _check(REACHABLE, f"{address} accepts connections (FORGE_TEMPORAL_ADDRESS)"), address


async def _connect_failure(
    exc: BaseException, address: str, namespace: str, timeout_s: float, *, tls: bool = False
) -> DoctorCheck:
    """Why the connection failed once the port answered: TLS, credentials, or something else.

    `tls`: Forge connected over TLS, so a server that hung up refused that TLS connection (a
    client certificate it does not accept, or none), not a plain-text one.
    """
    if isinstance(exc, TimeoutError):
        return _check(
            AUTH,
            f"{address} accepted a connection but Temporal did not answer within {timeout_s:g} s",
            "check that the address is a Temporal frontend (not a proxy or another service) "
            f"and whether it requires TLS: {_TLS_FIX}; {_TIMEOUT_FIX}",
        )
    text = exc.message if isinstance(exc, RPCError) else str(exc)
    text = text.removeprefix("Failed client connect: ")
    fix_auth = _AUTH_FIX.format(namespace=namespace)
    if isinstance(exc, RPCError) and exc.status in _REFUSED:
        return _check(AUTH, f"{address} refused Forge's credentials: {text}", fix_auth)
    if _AUTH_WORDS.search(text):
        return _check(AUTH, f"{address} refused Forge's credentials: {_one_line(text)}", fix_auth)
    if _TLS_WORDS.search(text):
        return _check(AUTH, f"the TLS handshake with {address} failed: {_one_line(text)}", _TLS_FIX)
    if tls:
        return _check(
            AUTH,
            f"the TLS connection with {address} was closed at the first call (a client "
            f"certificate it does not accept, or none): {_one_line(text)}",
            _TLS_FIX,
        )
    if await _speaks_tls(address, timeout_s):
        return _check(
            AUTH,
            f"{address} speaks TLS and Forge connected in plain text: the server closed the "
            "connection",
            _TLS_FIX,
        )
    return _check(
        AUTH,
        f"{address} accepted a connection but did not answer as Temporal: {_one_line(text)}",
        "check that the address is the cluster's Temporal frontend",
    )


async def _speaks_tls(address: str, timeout_s: float) -> bool:
    """Whether a TLS handshake with `address` completes (any certificate: only the protocol)."""
    host, _, port = address.rpartition(":")
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    try:
        _, writer = await asyncio.wait_for(
            asyncio.open_connection(host.strip("[]"), int(port), ssl=context), timeout_s
        )
    except (OSError, TimeoutError):  # ssl.SSLError is an OSError
        return False
    writer.close()
    return True


async def _namespace(client: Client, namespace: str, address: str) -> DoctorCheck:
    try:
        await client.workflow_service.describe_namespace(
            DescribeNamespaceRequest(namespace=namespace)
        )
        found = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return _check(
                NAMESPACE,
                f"namespace {namespace!r} does not exist at {address}",
                f"create it (temporal operator namespace create --namespace {namespace}), or "
                "set FORGE_NAMESPACE to the namespace Forge should use",
            )
        if exc.status in _REFUSED:
            return _check(
                NAMESPACE,
                f"{address} refused to describe namespace {namespace!r}: {exc.message}",
                _AUTH_FIX.format(namespace=namespace),
            )
        return _check(
            NAMESPACE,
            f"{address} did not describe namespace {namespace!r}: {exc.message}",
            "check the namespace and the server's health (temporal operator cluster health)",
        )
    kind = found.custom_attributes.get(TENANT_ATTRIBUTE.name)
    name = TENANT_ATTRIBUTE.name
    if kind is None:
        return _check(
            NAMESPACE,
            f"namespace {namespace!r} has no search attribute {name} (Keyword), which every "
            "Forge workflow carries",
            tenant_attribute_fix(namespace),
        )
    if kind != IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD:
        shown = IndexedValueType.Name(kind).removeprefix("INDEXED_VALUE_TYPE_").title()
        return _check(
            NAMESPACE,
            f"namespace {namespace!r} has {name} as a {shown} search attribute, not a Keyword",
            f"remove it and register it as Keyword: {tenant_attribute_fix(namespace)}",
        )
    return _check(NAMESPACE, f"namespace {namespace!r} exists and has {name} (Keyword)")


def _why(exc: OSError) -> str:
    # asyncio words a refusal "Connect call failed (addr)": the errno says it plainly.
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused (nothing listens there)"
    if isinstance(exc, socket.gaierror):
        return f"the host name does not resolve ({exc.strerror})"
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _one_line(text: str) -> str:
    return " ".join(text.split())
