"""Proxies on loopback in front of the real Temporal dev server, as a cluster's edge would be.

- `tls_proxy`: terminates mutual TLS (ALPN h2, a client certificate from the test CA
  required) and pipes the bytes to the dev server's plain port.
- `grpc_proxy`: a gRPC server (grpcio aio, one generic handler) that records each call's
  metadata, refuses a call whose `authorization` is not `Bearer <key>`, and forwards the rest.
- `silent_listener`: accepts connections and never answers (a frontend that hangs).

Each runs on an event loop of its own thread, so synchronous tests (the CLI through typer's
CliRunner, which runs its own loop) and asynchronous ones can use it alike.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from collections.abc import Awaitable, Iterator
from dataclasses import dataclass, field
from typing import Any

import grpc
import grpc.aio

_HOST = "127.0.0.1"
_CHUNK = 65536
# Metadata a Temporal client sends that the server reads; the rest is the proxy's own business.
_FORWARDED = ("client-name", "client-version", "supported-server-versions")


@contextlib.contextmanager
def _loop_thread() -> Iterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="test-proxy", daemon=True)
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=30)
        loop.close()


def _run(loop: asyncio.AbstractEventLoop, coro: Awaitable[Any]) -> Any:
    return asyncio.run_coroutine_threadsafe(coro, loop).result(timeout=60)  # type: ignore[arg-type]


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(_CHUNK):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, ssl.SSLError):
        pass
    finally:
        writer.close()


@dataclass
class TlsProxy:
    """Where the proxy listens, and the handshakes it refused (their reasons)."""

    address: str
    refused: list[str] = field(default_factory=list)


@contextlib.contextmanager
def tls_proxy(upstream: str, context: ssl.SSLContext) -> Iterator[TlsProxy]:
    """Terminate TLS with `context` on a free loopback port; pipe each connection to upstream."""
    host, port = upstream.rsplit(":", 1)
    proxy = TlsProxy(address="")
    # Open connections, ended at exit: a client's runtime may keep its connection alive.
    tasks: set[asyncio.Task[Any]] = set()

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        tasks.add(task)
        try:
            await _relay(reader, writer)
        finally:
            tasks.discard(task)
            # abort, not close: closing a TLS transport waits up to 30 s for the peer's TLS
            # shutdown before it closes the socket, and a stopped loop never gets there.
            writer.transport.abort()
            await _settled()

    async def _relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        # The handshake is done here, not by the server, so that a refusal can be recorded.
        try:
            await writer.start_tls(context)
        except (ssl.SSLError, ConnectionError) as exc:
            proxy.refused.append(str(exc))
            return
        try:
            up_reader, up_writer = await asyncio.open_connection(host, int(port))
        except OSError:
            return
        try:
            await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))
        finally:
            up_writer.close()
            await _settled()

    async def start() -> asyncio.Server:
        return await asyncio.start_server(serve, _HOST, 0)

    async def stop(server: asyncio.Server) -> None:
        server.close()
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await _closed(server)
        await _settled()

    with _loop_thread() as loop:
        server = _run(loop, start())
        proxy.address = f"{_HOST}:{server.sockets[0].getsockname()[1]}"
        try:
            yield proxy
        finally:
            _run(loop, stop(server))


async def _settled() -> None:
    """Let the loop run the socket closes just scheduled: a transport closes its socket on the
    next iteration, and a loop stopped before then leaves it open (a ResourceWarning, which
    fails the test that is running when it is collected)."""
    for _ in range(2):
        await asyncio.sleep(0)


async def _closed(server: asyncio.Server) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(server.wait_closed(), 5)


@dataclass
class GrpcProxy:
    """Where the proxy listens and the (method, metadata) of every call it received."""

    address: str
    calls: list[tuple[str, dict[str, str]]] = field(default_factory=list)


class _Forward(grpc.GenericRpcHandler):
    def __init__(self, proxy: GrpcProxy, channel: grpc.aio.Channel, api_key: str) -> None:
        self._proxy, self._channel, self._api_key = proxy, channel, api_key

    def service(self, details: grpc.HandlerCallDetails) -> grpc.RpcMethodHandler:
        method: str = details.method  # type: ignore[attr-defined]
        forward = self._channel.unary_unary(method)  # bytes in, bytes out: no (de)serializers

        async def unary(request: bytes, context: grpc.aio.ServicerContext) -> bytes:
            metadata = {k: str(v) for k, v in context.invocation_metadata() or ()}
            self._proxy.calls.append((method, metadata))
            if metadata.get("authorization") != f"Bearer {self._api_key}":
                await context.abort(grpc.StatusCode.UNAUTHENTICATED, "the API key is not valid")
            upstream = [(k, v) for k, v in metadata.items() if k in _FORWARDED]
            remaining = context.time_remaining()
            try:
                reply: bytes = await forward(request, metadata=upstream, timeout=remaining)
            except grpc.aio.AioRpcError as exc:
                await context.abort(exc.code(), exc.details() or "")
            return reply

        return grpc.unary_unary_rpc_method_handler(unary)


@contextlib.contextmanager
def grpc_proxy(
    upstream: str, api_key: str, credentials: grpc.ServerCredentials | None = None
) -> Iterator[GrpcProxy]:
    """A recording, key-checking gRPC proxy to `upstream`; TLS when `credentials` are given."""
    proxy = GrpcProxy(address="")
    holder: dict[str, Any] = {}

    async def start() -> None:
        channel = grpc.aio.insecure_channel(upstream)
        server = grpc.aio.server()
        server.add_generic_rpc_handlers((_Forward(proxy, channel, api_key),))
        target = f"{_HOST}:0"
        port = (
            server.add_secure_port(target, credentials)
            if credentials is not None
            else server.add_insecure_port(target)
        )
        await server.start()
        holder.update(server=server, channel=channel)
        proxy.address = f"{_HOST}:{port}"

    async def stop() -> None:
        await holder["server"].stop(grace=None)
        await holder["channel"].close()

    with _loop_thread() as loop:
        _run(loop, start())
        try:
            yield proxy
        finally:
            _run(loop, stop())


@contextlib.contextmanager
def silent_listener() -> Iterator[str]:
    """A loopback port that accepts connections and never sends a byte."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        sock.listen(16)
        yield f"{_HOST}:{sock.getsockname()[1]}"


def free_port_address() -> str:
    """A loopback address no one listens on (bound, then released): connecting is refused."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((_HOST, 0))
        return f"{_HOST}:{sock.getsockname()[1]}"
