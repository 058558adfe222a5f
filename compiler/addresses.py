"""Which IP addresses an outbound request may reach: public ones only, pure (docs/security.md).

An allowlisted *name* says nothing about where it points: a hosts entry, a DNS answer the
remote side controls (rebinding) or a split-horizon resolver can point it at loopback, the
LAN or the cloud metadata service. The outbound client (activities/net/outbound.py) judges
every address a name resolves to with `forbidden_range` before it sends a packet.

Addresses that embed an IPv4 address (IPv4-mapped ::ffff:a.b.c.d, NAT64 64:ff9b::/96 and 6to4
2002::/16) are judged as that IPv4 address: ::ffff:127.0.0.1 is loopback, 64:ff9b::808:808 is
as public as 8.8.8.8.
"""

import ipaddress
from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

__all__ = ["IpAddress", "forbidden_range", "unmapped"]

IpAddress = IPv4Address | IPv6Address

# First match wins: the narrower, more telling name comes before the range that holds it.
_V4: tuple[tuple[IPv4Network, str], ...] = tuple(
    (IPv4Network(net), label)
    for net, label in (
        ("0.0.0.0/32", "unspecified"),
        ("0.0.0.0/8", "this-network 0.0.0.0/8"),
        ("127.0.0.0/8", "loopback"),
        ("10.0.0.0/8", "private 10.0.0.0/8"),
        ("172.16.0.0/12", "private 172.16.0.0/12"),
        ("192.168.0.0/16", "private 192.168.0.0/16"),
        ("100.64.0.0/10", "shared address space 100.64.0.0/10"),
        ("169.254.169.254/32", "cloud metadata"),
        ("169.254.0.0/16", "link-local"),
        ("224.0.0.0/4", "multicast"),
        ("255.255.255.255/32", "broadcast"),
        ("240.0.0.0/4", "reserved"),
    )
)
_V6: tuple[tuple[IPv6Network, str], ...] = tuple(
    (IPv6Network(net), label)
    for net, label in (
        ("::/128", "unspecified"),
        ("::1/128", "loopback"),
        ("fd00:ec2::254/128", "cloud metadata"),  # the IPv6 metadata service on AWS
        ("fe80::/10", "link-local"),
        ("fec0::/10", "site-local"),
        ("fc00::/7", "unique local (private) fc00::/7"),
        ("ff00::/8", "multicast"),
    )
)
_NAT64 = IPv6Network("64:ff9b::/96")


def forbidden_range(ip: IpAddress) -> str | None:
    """None when `ip` is a public address; else the name of the range that makes it not public.

    The named ranges come first; anything else the ipaddress module does not call global
    (documentation, benchmarking, protocol assignments, ...) or calls reserved is refused too.
    """
    embedded, form = _embedded_ipv4(ip)
    if embedded is not None:
        inner = forbidden_range(embedded)
        return None if inner is None else f"{form} of {embedded}, {inner}"
    ranges: tuple[tuple[IPv4Network | IPv6Network, str], ...] = (
        _V4 if isinstance(ip, IPv4Address) else _V6
    )
    for network, label in ranges:
        if ip in network:
            return label
    if ip.is_reserved:
        return "reserved"
    if not ip.is_global:
        return "special-purpose, not globally routable"
    return None


def unmapped(ip: IpAddress) -> IpAddress:
    """The address to connect to: an IPv4-mapped IPv6 address is its IPv4 address."""
    if isinstance(ip, IPv6Address) and ip.ipv4_mapped is not None:
        return ip.ipv4_mapped
    return ip


def _embedded_ipv4(ip: IpAddress) -> tuple[IPv4Address | None, str]:
    if not isinstance(ip, IPv6Address):
        return None, ""
    if ip.ipv4_mapped is not None:
        return ip.ipv4_mapped, "IPv4-mapped form"
    if ip in _NAT64:
        return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF), "NAT64 form"
    if ip.sixtofour is not None:
        return ip.sixtofour, "6to4 form"
    return None, ""
