"""Connecting to Temporal: the one place Settings become Client.connect's arguments.

Every client Forge opens (the worker's, the CLI's, the API's, the readers') comes from
`open_client`, so the address, namespace, TLS files and API key of workers/settings.py apply
to all of them, and a failure reads the same everywhere: one line naming the address and how
Forge tried to reach it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import SecretBytes
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode, TLSConfig

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

if TYPE_CHECKING:
    from workers.settings import Settings

__all__ = ["TemporalConnectError", "connect_arguments", "open_client", "transport"]

_REFUSED_CREDENTIALS = (RPCStatusCode.UNAUTHENTICATED, RPCStatusCode.PERMISSION_DENIED)
# The server hung up at the first call, before any answer (no close_notify, or mid-request).
_CLOSED = re.compile(
    r'close_notify|UnexpectedEof|Canceled, "connection closed"|ConnectionReset|BrokenPipe', re.I
)
_CLOSED_TLS = (
    "the server closed the TLS connection at the first call: it refused the client "
    "certificate (or there was none), or it does not speak TLS"
)
_CLOSED_PLAIN = (
    "the server closed the connection at the first call: if it expects TLS, set "
    "FORGE_TEMPORAL_TLS=true (and FORGE_TEMPORAL_TLS_CA for a private CA)"
)
_CREDENTIALS_HINT = (
    "check FORGE_TEMPORAL_API_KEY (or TEMPORAL_API_KEY), the client certificate and "
    "FORGE_NAMESPACE: the server must accept them for this namespace"
)
_STATUS = re.compile(r'Status \{ code: (?P<code>\w+), message: "(?P<message>(?:[^"\\]|\\.)*)"')
# The Rust core's error text nests transport errors; these name the cause a person can act on.
_CAUSES = (
    (re.compile(r"Connection refused", re.I), "connection refused (is a server listening?)"),
    (
        re.compile(r"UnknownIssuer|BadSignature", re.I),
        "the server's certificate is not signed by the CA Forge trusts (FORGE_TEMPORAL_TLS_CA)",
    ),
    (
        re.compile(r"NotValidForName", re.I),
        "the server's certificate does not name the host Forge expects "
        "(FORGE_TEMPORAL_TLS_SERVER_NAME)",
    ),
    (re.compile(r"CertificateRequired", re.I), "the server requires a client certificate"),
    (re.compile(r"alert.*(Bad|Unknown|Decrypt)", re.I), "the server refused the certificate"),
    (re.compile(r"failed to lookup|dns error", re.I), "the host name does not resolve"),
)


class TemporalConnectError(ForgeError):
    """Temporal could not be reached at the configured address, or refused Forge's credentials."""

    code = ErrorCode.TEMPORAL_UNREACHABLE


def connect_arguments(settings: Settings) -> dict[str, Any]:
    """Client.connect's keyword arguments for the namespace, TLS and API key Settings hold.

    Raises:
        TemporalConnectError: a TLS file named in Settings can no longer be read.
    """
    arguments: dict[str, Any] = {"namespace": settings.namespace, "tls": False}
    if settings.temporal_tls_on:
        arguments["tls"] = TLSConfig(
            server_root_ca_cert=_read(settings.temporal_tls_ca),
            domain=settings.temporal_tls_server_name,
            client_cert=_read(settings.temporal_tls_cert),
            client_private_key=_read(settings.temporal_tls_key),
        )
    if settings.temporal_api_key is not None:
        # Sent as `authorization: Bearer <key>` on every call.
        arguments["api_key"] = settings.temporal_api_key.get_secret_value()
    return arguments


def transport(settings: Settings) -> str:
    """How Forge reaches Temporal, for a message: plain TCP or TLS and with what; never a secret."""
    if not settings.temporal_tls_on:
        parts = ["plain TCP, no TLS"]
    else:
        tls = [
            f"CA {_named(settings.temporal_tls_ca)}" if settings.temporal_tls_ca else "system CAs",
        ]
        if settings.temporal_tls_cert:
            tls.append(f"client certificate {_named(settings.temporal_tls_cert)}")
        if settings.temporal_tls_server_name:
            tls.append(f"server name {settings.temporal_tls_server_name}")
        parts = [f"TLS with {', '.join(tls)}"]
    if settings.temporal_api_key is not None:
        parts.append("an API key")
    return " and ".join(parts)


async def open_client(settings: Settings, **options: Any) -> Client:
    """A client of the configured cluster, or of the embedded dev server (started if needed).

    Args:
        settings: Address, namespace, TLS, API key and connect timeout.
        options: Further Client.connect arguments (plugins, data_converter).

    Raises:
        TemporalConnectError: no answer within the timeout, a refused connection, handshake
            or credentials; the message names the address and the transport.
        DevServerError: the embedded dev server could not be started.
    """
    from workers.process.devserver import ensure_address

    address = await ensure_address(settings)
    where = f"Temporal at {address} ({transport(settings)})"
    timeout = settings.temporal_connect_timeout
    try:
        return await asyncio.wait_for(
            Client.connect(address, **connect_arguments(settings), **options), timeout
        )
    # Each raise keeps the SDK's error as its cause, for a caller that tells failures apart by
    # it (forge doctor); the CLI prints only the one line.
    except TimeoutError as exc:
        raise TemporalConnectError(
            f"{where} did not answer within {timeout:g} s",
            hint="check that the address is a Temporal frontend and that it speaks TLS exactly "
            "when Forge does (FORGE_TEMPORAL_TLS); FORGE_TEMPORAL_CONNECT_TIMEOUT sets the wait",
        ) from exc
    except RPCError as exc:
        if exc.status in _REFUSED_CREDENTIALS:
            raise TemporalConnectError(
                f"{where} refused the credentials: {exc.status.name}: {_one_line(exc.message)}",
                hint=_CREDENTIALS_HINT,
            ) from exc
        raise TemporalConnectError(
            f"{where} answered {exc.status.name if exc.status else 'an error'}: "
            f"{_one_line(exc.message)}"
        ) from exc
    # The SDK reports a failed connect, handshake or first call as RuntimeError: its text
    # holds the gRPC status of that first call (get_system_info) when the server answered.
    except RuntimeError as exc:
        status = _STATUS.search(str(exc))
        cause = _cause(str(exc), tls=settings.temporal_tls_on)
        if status is not None and cause is None:
            code = re.sub(r"(?<!^)(?=[A-Z])", "_", status["code"]).upper()
            if code in {c.name for c in _REFUSED_CREDENTIALS}:
                raise TemporalConnectError(
                    f"{where} refused the credentials: {code}: {_one_line(status['message'])}",
                    hint=_CREDENTIALS_HINT,
                ) from exc
            raise TemporalConnectError(
                f"{where} answered {code}: {_one_line(status['message'])}"
            ) from exc
        reason = cause or _one_line(str(exc).removeprefix("Failed client connect: "))
        raise TemporalConnectError(f"cannot connect to {where}: {reason}") from exc


def _named(source: Any) -> str:
    """A TLS file's path, or "inline" for PEM given as text, for a message."""
    return str(source) if isinstance(source, Path) else "(inline PEM)"


def _read(path: Any) -> bytes | None:
    if path is None:
        return None
    if isinstance(path, bytes):  # inline PEM (TEMPORAL_TLS_*_DATA)
        return path
    if isinstance(path, SecretBytes):
        return path.get_secret_value()
    try:
        data: bytes = path.read_bytes()
    except OSError as exc:
        raise TemporalConnectError(
            f"cannot read the TLS file {path}: {exc.strerror}",
            hint="check the FORGE_TEMPORAL_TLS_* variable that names it",
        ) from None
    return data


def _cause(text: str, *, tls: bool) -> str | None:
    for pattern, cause in _CAUSES:
        if pattern.search(text):
            return cause
    if _CLOSED.search(text):
        return _CLOSED_TLS if tls else _CLOSED_PLAIN
    return None


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= 300 else line[:297] + "..."
