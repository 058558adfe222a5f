"""What the outbound-client tests share: loopback servers, resolvers the test controls, a guard
on connect that fails a test before any packet could go to an address that is not loopback.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import ssl
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from compiler.addresses import IpAddress


@dataclass(frozen=True)
class Seen:
    """One request a test server received."""

    method: str
    path: str
    host: str | None


@dataclass
class Site:
    """A loopback HTTP(S) server: its port, the requests it saw, the SNI names it was sent."""

    port: int
    seen: list[Seen] = field(default_factory=list)
    sni: list[str | None] = field(default_factory=list)


class _Handler(BaseHTTPRequestHandler):
    site: Site

    def _reply(self) -> None:
        self.site.seen.append(Seen(self.command, self.path, self.headers.get("Host")))
        if self.path.startswith("/redirect"):
            self.send_response(302)
            self.send_header("Location", "http://169.254.169.254/latest/meta-data/")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path.startswith("/bytes/"):
            body = b"x" * int(self.path.removeprefix("/bytes/"))
        else:
            body = json.dumps({"path": self.path, "host": self.headers.get("Host")}).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _reply

    def log_message(self, *_args: Any) -> None:
        pass


@contextmanager
def serve(tls: ssl.SSLContext | None = None) -> Iterator[Site]:
    """An HTTP server on 127.0.0.1 (HTTPS with `tls`, recording the SNI of each handshake)."""
    site = Site(port=0)
    server = ThreadingHTTPServer(("127.0.0.1", 0), type("H", (_Handler,), {"site": site}))
    server.daemon_threads = True
    if tls is not None:
        tls.sni_callback = lambda _sock, name, _ctx: site.sni.append(name)
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    site.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield site
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@dataclass
class Trickle:
    """A loopback server that answers one byte at a time, forever: its port, bytes sent."""

    port: int
    sent: int = 0


@contextmanager
def trickle(part: str, interval_s: float = 0.05) -> Iterator[Trickle]:
    """A server that sends the status line, then trickles `part` ("headers" or "body").

    Every byte arrives well inside any socket timeout, so only a deadline on the whole
    request ends it.
    """
    listener = socket.create_server(("127.0.0.1", 0))
    state = Trickle(port=listener.getsockname()[1])
    stop = threading.Event()
    head = b"HTTP/1.1 200 OK\r\n" + (b"X-Slow: " if part == "headers" else b"\r\n")

    def serve_one(conn: socket.socket) -> None:
        with conn:
            try:
                while b"\r\n\r\n" not in conn.recv(65536):
                    pass
                conn.sendall(head)
                while not stop.wait(interval_s):
                    conn.sendall(b"x")
                    state.sent += 1
            except OSError:
                return  # the client hung up: what the test is waiting for

    def accept() -> None:
        listener.settimeout(0.05)  # closing a listener does not wake a blocked accept()
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(None)
            threading.Thread(target=serve_one, args=(conn,), daemon=True).start()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        stop.set()
        thread.join()
        listener.close()


class ScriptedResolver:
    """A resolver the test controls: each call takes the next answer (the last repeats)."""

    def __init__(self, answers: dict[str, list[list[str]]]) -> None:
        self._answers = answers
        self.calls: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[IpAddress]:
        self.calls.append((host, port))
        script = self._answers.get(host)
        if script is None:
            raise socket.gaierror(socket.EAI_NONAME, f"{host}: Name or service not known")
        answer = script[min(len(self.calls) - 1, len(script) - 1)]
        return [ipaddress.ip_address(a) for a in answer]


def answer_names(monkeypatch: pytest.MonkeyPatch, table: dict[str, list[str]]) -> list[str]:
    """Make socket.getaddrinfo answer `table`'s names; numeric hosts as ever; no real DNS.

    Returns the names looked up, in order.
    """
    real = socket.getaddrinfo
    asked: list[str] = []

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        name = host.decode() if isinstance(host, bytes) else str(host)
        try:
            ipaddress.ip_address(name)
        except ValueError:
            asked.append(name)
            if name not in table:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known") from None
            port_no = int(port or 0)
            return [
                (
                    socket.AF_INET6 if ":" in a else socket.AF_INET,
                    socket.SOCK_STREAM,
                    socket.IPPROTO_TCP,
                    "",
                    (a, port_no, 0, 0) if ":" in a else (a, port_no),
                )
                for a in table[name]
            ]
        return real(host, port, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return asked


def guard_connects(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, int]]:
    """Record every TCP connect; one to an address that is not loopback fails the test instead.

    Returns the (address, port) pairs connected to, in order.
    """
    attempts: list[tuple[str, int]] = []
    real_connect, real_connect_ex = socket.socket.connect, socket.socket.connect_ex

    def check(address: Any) -> None:
        if isinstance(address, tuple):  # AF_UNIX paths (the bridge's socket) pass
            attempts.append((address[0], address[1]))
            if not ipaddress.ip_address(address[0]).is_loopback:
                raise AssertionError(f"a connection to {address[0]} was attempted")

    def connect(self: socket.socket, address: Any) -> None:
        check(address)
        real_connect(self, address)

    def connect_ex(self: socket.socket, address: Any) -> int:
        check(address)
        return real_connect_ex(self, address)

    monkeypatch.setattr(socket.socket, "connect", connect)
    monkeypatch.setattr(socket.socket, "connect_ex", connect_ex)
    return attempts


# Addresses the outbound client never reaches unless a rule names them, with the range it names.
NOT_PUBLIC = [
    ("127.0.0.1", "loopback"),
    ("127.45.6.7", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private 10.0.0.0/8"),
    ("172.16.0.1", "private 172.16.0.0/12"),
    ("172.31.255.254", "private 172.16.0.0/12"),
    ("192.168.1.1", "private 192.168.0.0/16"),
    ("100.64.0.1", "shared address space 100.64.0.0/10"),
    ("100.100.100.200", "shared address space 100.64.0.0/10"),  # Alibaba Cloud's metadata
    ("169.254.169.254", "cloud metadata"),
    ("169.254.1.1", "link-local"),
    ("fe80::1", "link-local"),
    ("fc00::1", "unique local (private) fc00::/7"),
    ("fd12:3456::1", "unique local (private) fc00::/7"),
    ("fd00:ec2::254", "cloud metadata"),
    ("fec0::1", "site-local"),
    ("224.0.0.1", "multicast"),
    ("239.255.255.250", "multicast"),
    ("ff02::1", "multicast"),
    ("0.0.0.0", "unspecified"),
    ("0.1.2.3", "this-network 0.0.0.0/8"),
    ("::", "unspecified"),
    ("255.255.255.255", "broadcast"),
    ("240.0.0.1", "reserved"),
    ("::ffff:127.0.0.1", "IPv4-mapped form of 127.0.0.1, loopback"),
    ("::ffff:169.254.169.254", "IPv4-mapped form of 169.254.169.254, cloud metadata"),
    ("::ffff:10.0.0.1", "IPv4-mapped form of 10.0.0.1, private 10.0.0.0/8"),
    ("64:ff9b::a9fe:a9fe", "NAT64 form of 169.254.169.254, cloud metadata"),
    ("2002:7f00:1::1", "6to4 form of 127.0.0.1, loopback"),
    ("::127.0.0.1", "reserved"),  # IPv4-compatible (deprecated): all of ::/8 is reserved
    ("192.0.2.10", "special-purpose, not globally routable"),  # documentation
    ("198.18.0.1", "special-purpose, not globally routable"),  # benchmarking
    ("2001:db8::1", "special-purpose, not globally routable"),  # documentation
]
# Public, and so reached (the tests never connect to them: they only judge them).
PUBLIC = ["93.184.216.34", "8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8", "64:ff9b::808:808"]
