"""The one HTTP client for requests Forge makes on someone's behalf (the bridge, webhooks).

What it guarantees, each decided before the first packet of the request is sent:
- The host name is resolved once, by the client's resolver. Every address it resolves to must
  be public (compiler.addresses.forbidden_range) unless the caller names that very IP: if any
  one is not, the request is refused, rather than the public ones kept, because a name whose
  answers mix public and private addresses is a rebinding attempt or an internal name, and
  either way not something to reach by picking.
- The connection goes to an address that was checked, never to a second resolution; the Host
  header, TLS SNI and certificate verification use the original name (activities/net/pinned).
- No redirects are followed (a 3xx is the response), proxy variables are ignored, the body read
  is capped, and the whole request runs under one deadline.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from ipaddress import ip_address

from activities.net.pinned import Deadline, PinnedHTTPConnection, PinnedHTTPSConnection
from compiler.addresses import IpAddress, forbidden_range, unmapped
from compiler.egress import RequestTarget, request_target
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

__all__ = [
    "AddressRefused",
    "OutboundClient",
    "OutboundError",
    "OutboundRefused",
    "OutboundResponse",
    "OutboundTimeout",
    "Resolver",
    "system_resolver",
]

# host, port -> the addresses to judge, in the order to try them.
Resolver = Callable[[str, int], Sequence[IpAddress]]
USER_AGENT = "forge-outbound/1"
# The client frames the request and says where it goes; a caller's value would contradict it.
_CLIENT_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})


class OutboundError(ForgeError):
    """No response: the name did not resolve, the connection or the TLS handshake failed."""

    code = ErrorCode.HTTP_ERROR


class OutboundTimeout(OutboundError):
    """The request did not finish (connect, send, headers and body) within its time."""

    code = ErrorCode.HTTP_TIMEOUT


class OutboundRefused(OutboundError):
    """Refused before anything was sent: the URL cannot be judged, or its address is not public."""

    code = ErrorCode.EGRESS_BLOCKED


class AddressRefused(OutboundRefused):
    """The host resolved to an address outside the public internet the caller did not name."""

    def __init__(self, host: str, address: IpAddress, range_: str, *, of: int) -> None:
        self.host, self.address, self.range = host, address, range_
        among = f", one of the {of} addresses it resolves to" if of > 1 else ""
        what = (
            f"{address} is {range_}"
            if host == address.compressed
            else f"{host} resolved to {address} ({range_}{among})"
        )
        super().__init__(f"{what}: only public addresses are reached unless that IP is named")
        self.what = what


@dataclass(frozen=True)
class OutboundResponse:
    """What came back: any status (3xx included), the headers, the body up to the cap."""

    status: int
    reason: str
    headers: list[tuple[str, str]]
    body: bytes
    truncated: bool  # the body went on past the cap and was cut there


def system_resolver(host: str, port: int) -> list[IpAddress]:
    """The addresses getaddrinfo gives for a TCP connection to host:port, in its order."""
    # Looked up at call time (not bound at import) so the socket module stays the one resolver.
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    found: list[IpAddress] = []
    for family, *_, sockaddr in infos:
        if family in (socket.AF_INET, socket.AF_INET6):
            ip = ip_address(str(sockaddr[0]).split("%", 1)[0])
            if ip not in found:
                found.append(ip)
    return found


class OutboundClient:
    """Sends one HTTP request at a time to public addresses (or an IP the caller names)."""

    def __init__(
        self,
        *,
        resolver: Resolver = system_resolver,
        tls: ssl.SSLContext | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self._resolver = resolver
        # The system's trust store, hostname checking on: verified for the URL's host name.
        self._tls = tls if tls is not None else ssl.create_default_context()
        self._user_agent = user_agent

    def send(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        body: bytes | None = None,
        timeout_s: float,
        max_body: int,
        named: Collection[IpAddress] = (),
    ) -> OutboundResponse:
        """Send `method url` and read the response; `named` are IPs allowed whatever their range.

        Raises:
            OutboundRefused: the URL cannot be judged, or an address is not public (nothing sent).
            OutboundTimeout: no complete response within timeout_s.
            OutboundError: no response (resolution, connection or TLS failed).
        """
        if not timeout_s > 0 or max_body < 0:
            raise ValueError(f"timeout_s must be positive and max_body not negative ({timeout_s})")
        sent = dict(headers or {})
        clash = sorted(k for k in sent if k.lower() in _CLIENT_HEADERS)
        if clash:
            raise ValueError(f"headers {clash} are set by the outbound client, not its caller")
        target = request_target(url)
        if isinstance(target, str):
            raise OutboundRefused(target)
        deadline = Deadline(timeout_s)
        addresses = self._checked(target, named)
        sent.setdefault("User-Agent", self._user_agent)
        sent["Connection"] = "close"
        try:
            return self._exchange(method, target, addresses, deadline, sent, body, max_body)
        except TimeoutError:
            raise OutboundTimeout(f"no complete response within {timeout_s:g} s") from None

    def _checked(self, target: RequestTarget, named: Collection[IpAddress]) -> list[IpAddress]:
        """The addresses to connect to, every one judged; refused if any one is not allowed."""
        if target.ip is not None:
            found: Sequence[IpAddress] = [target.ip]  # an IP literal: nothing to resolve
        else:
            try:
                found = self._resolver(target.host, target.port)
            except OSError as err:
                raise OutboundError(f"{target.host} could not be resolved: {err}") from None
            if not found:
                raise OutboundError(f"{target.host} resolved to no address")
        allowed = {unmapped(ip) for ip in named}
        for ip in found:
            if unmapped(ip) in allowed:
                continue
            range_ = forbidden_range(ip)
            if range_ is not None:
                raise AddressRefused(target.host, ip, range_, of=len(found))
        return list(dict.fromkeys(unmapped(ip) for ip in found))

    def _exchange(
        self,
        method: str,
        target: RequestTarget,
        addresses: list[IpAddress],
        deadline: Deadline,
        headers: dict[str, str],
        body: bytes | None,
        max_body: int,
    ) -> OutboundResponse:
        conn: http.client.HTTPConnection
        if target.scheme == "https":
            conn = PinnedHTTPSConnection(
                target.host, target.port, addresses=addresses, deadline=deadline, tls=self._tls
            )
        else:
            conn = PinnedHTTPConnection(
                target.host, target.port, addresses=addresses, deadline=deadline
            )
        response: http.client.HTTPResponse | None = None
        try:
            conn.request(method, target.path, body=body, headers=headers)
            response = conn.getresponse()
            data = response.read(max_body + 1)
        except (http.client.HTTPException, OSError) as err:
            if deadline.fired or isinstance(err, TimeoutError):
                raise TimeoutError from None
            raise OutboundError(_failure(err)) from None
        finally:
            deadline.finish()
            if response is not None:
                response.close()  # with Connection: close the response holds the socket
            conn.close()
        if deadline.fired:  # a body without a length ends at EOF, which the shutdown also is
            raise TimeoutError
        return OutboundResponse(
            status=response.status,
            reason=response.reason,
            headers=response.getheaders(),
            body=data[:max_body],
            truncated=len(data) > max_body,
        )


def _failure(err: Exception) -> str:
    if isinstance(err, ssl.SSLCertVerificationError):
        return f"TLS certificate not accepted: {err.verify_message}"
    if isinstance(err, ConnectionError) and not err.errno:
        return str(err)  # open_socket's own message, every address tried
    return f"{type(err).__name__}: {err}"
