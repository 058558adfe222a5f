"""The egress allowlist, pure: may this HTTP request leave, and by which rule (DESIGN §5).

The URL is parsed here, strictly, rather than by urllib: the bridge then requests the URL rebuilt
from the parts that were checked (EgressDecision.target), so no second parser can read a
different host out of the same text. Anything ambiguous is refused with a reason that says what
to send instead: userinfo, backslashes, unencoded spaces or non-ASCII, numeric host forms other
than a canonical IP address, encoded slashes, and dot segments in the path.
"""

import ipaddress
import re
from dataclasses import dataclass

from schemas.bridge import EgressDecision
from schemas.profile import EgressPolicy, EgressRule

__all__ = ["RequestTarget", "egress_decision", "named_ip", "request_target"]

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
_DEFAULT_PORTS = {"http": 80, "https": 443}
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE"})
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*):")
# RFC 3986's unreserved, reserved and '%': anything else must arrive percent-encoded.
_URL_CHARS = re.compile(r"[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=%]*")
_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?")
# What inet_aton (and so getaddrinfo) reads as a number: such a last label makes the host an
# IPv4 address in disguise ("2130706433", "0x7f.1" are 127.0.0.1).
_NUMERIC = re.compile(r"0x[0-9a-f]*|[0-9]+")
_PCT = re.compile(r"%(?![0-9A-Fa-f]{2})|%(2[Ff]|5[Cc]|00)")
_ESCAPE = re.compile(r"%([0-9A-Fa-f]{2})")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


@dataclass(frozen=True)
class _Host:
    name: str  # lowercase host name, or the IP address in its compressed form
    ip: IpAddress | None
    port: int | None


@dataclass(frozen=True)
class _Url:
    scheme: str
    host: _Host
    path: str  # as sent, "/" when the URL has none
    query: str  # as sent, with its "?" (the fragment is never sent)
    segments: tuple[str, ...]

    @property
    def port(self) -> int:
        return self.host.port if self.host.port is not None else _DEFAULT_PORTS[self.scheme]

    def netloc(self) -> str:
        name = (
            f"[{self.host.name}]"
            if isinstance(self.host.ip, ipaddress.IPv6Address)
            else (self.host.name)
        )
        return name if self.host.port is None else f"{name}:{self.host.port}"

    def shown(self) -> str:
        # The query is left out of reasons: it often carries keys, and reasons are recorded.
        return f"{self.scheme}://{self.netloc()}{self.path}" + (
            " (query omitted)" * bool(self.query)
        )


@dataclass(frozen=True)
class RequestTarget:
    """Where a URL sends a request, read by the same parser that checked it."""

    scheme: str  # "http" or "https"
    host: str  # lowercase host name, or the IP address in its compressed form
    ip: IpAddress | None  # the host when the URL names an IP address
    port: int  # explicit, or the scheme's default
    path: str  # path and query as sent (the fragment never is)


def request_target(url: str) -> RequestTarget | str:
    """The URL's scheme, host, port and path as egress_decision reads them; or why it cannot be."""
    parsed = _parse_url(url)
    if isinstance(parsed, str):
        return parsed
    host = parsed.host
    return RequestTarget(parsed.scheme, host.name, host.ip, parsed.port, parsed.path + parsed.query)


def named_ip(rule: EgressRule) -> IpAddress | None:
    """The IP address a rule names literally (`127.0.0.1:8080`, `[::1]`), else None.

    Only such a rule lets a request reach an address that is not public (compiler.addresses):
    a rule that names a host name never does, whatever the name resolves to.
    """
    host = _parse_host(rule.domain.strip().lower(), rule=True)
    return None if isinstance(host, str) else host.ip


def egress_decision(method: str, url: str, policy: EgressPolicy) -> EgressDecision:
    """Whether `method url` may leave under `policy`: the first rule that admits it, or why not.

    A rule admits a request when its host is the rule's domain (or, with include_subdomains, a
    subdomain of it), its port is the rule's explicit port or else the scheme's default, its
    path lies under the rule's path_prefix segment by segment, and its method is listed.
    """
    verb = method.upper()
    parsed = _parse_url(url)
    if isinstance(parsed, str):
        return _blocked(f"{verb} request refused: {parsed}")
    if verb not in _METHODS:
        return _blocked(
            f"{verb!r} {parsed.shown()}: the bridge sends only {', '.join(sorted(_METHODS))}"
        )
    if not policy.allow:
        return _blocked(
            f"{verb} {parsed.shown()}: the execution profile allows no egress at all; add an "
            f"egress.allow rule for {parsed.host.name} to the profile to reach it"
        )
    near: str | None = None
    for index, rule in enumerate(policy.allow):
        miss = _rule_miss(index, rule, parsed, verb)
        if miss is None:
            target = f"{parsed.scheme}://{parsed.netloc()}{parsed.path}{parsed.query}"
            return EgressDecision(
                allowed=True,
                rule_index=index,
                reason=f"{verb} {parsed.shown()} allowed by egress rule {index} ({_show(rule)})",
                target=target,
            )
        if near is None and not miss.startswith("!"):
            near = miss
    if near is not None:
        return _blocked(f"{verb} {parsed.shown()}: {near}")
    hosts = ", ".join(_show(r) for r in policy.allow[:10])
    return _blocked(
        f"{verb} {parsed.shown()}: no egress rule names host {parsed.host.name} (the profile "
        f"allows {hosts}); add a rule for it to the execution profile's egress.allow"
    )


def _blocked(reason: str) -> EgressDecision:
    return EgressDecision(allowed=False, reason=reason)


def _show(rule: EgressRule) -> str:
    sub = " and subdomains" if rule.include_subdomains else ""
    return f"{rule.domain}{sub}, path {rule.path_prefix}, {'/'.join(rule.methods)}"


def _rule_miss(index: int, rule: EgressRule, url: _Url, verb: str) -> str | None:
    """None when the rule admits the request; else why not ('!' first: host not named)."""
    host = _parse_host(rule.domain.strip().lower(), rule=True)
    prefix = _segments(rule.path_prefix) if rule.path_prefix.startswith("/") else "no leading /"
    if isinstance(host, str) or isinstance(prefix, str):
        return f"!rule {index} is malformed ({rule.domain!r} {rule.path_prefix!r})"
    if prefix and not prefix[-1]:
        prefix = prefix[:-1]  # "/api/" is the prefix "/api"
    if host.ip is not None:
        if url.host.ip != host.ip:
            return "!"
    elif url.host.ip is not None or not (
        url.host.name == host.name
        or (rule.include_subdomains and url.host.name.endswith("." + host.name))
    ):
        return "!"
    named = f"host {url.host.name} is named by egress rule {index} ({_show(rule)}) but"
    wanted = host.port if host.port is not None else _DEFAULT_PORTS[url.scheme]
    if url.port != wanted:
        return f"{named} port {url.port} is not its port {wanted}"
    if tuple(url.segments[: len(prefix)]) != prefix:
        return f"{named} path {url.path} is outside its path prefix {rule.path_prefix}"
    if verb not in rule.methods:
        return f"{named} method {verb} is not one of {', '.join(rule.methods)}"
    return None


def _parse_url(url: str) -> _Url | str:
    scheme_match = _SCHEME.match(url)
    if scheme_match is None:
        return "the URL has no scheme; write it as https://host/path"
    scheme = scheme_match.group(1).lower()
    if scheme not in _DEFAULT_PORTS:
        return f"scheme {scheme!r} is not allowed; only http and https leave the bridge"
    if _URL_CHARS.fullmatch(url) is None:
        return (
            "the URL holds characters that must be percent-encoded (spaces, backslashes, quotes, "
            "control or non-ASCII characters); encode them, and write an IDN host as xn--"
        )
    rest = url[scheme_match.end() :]
    if not rest.startswith("//"):
        return "the URL has no //host part; write it as https://host/path"
    rest = rest[2:]
    end = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, rest = rest[:end], rest[end:].split("#", 1)[0]
    if "@" in authority:
        return "the URL carries credentials (user@ or user:password@); send them in a header"
    host = _parse_host(authority.lower())
    if isinstance(host, str):
        return host
    path, sep, query = rest.partition("?")
    path = path or "/"
    segments = _segments(path)
    if isinstance(segments, str):
        return segments
    return _Url(scheme, host, path, sep + query, segments)


def _parse_host(text: str, *, rule: bool = False) -> _Host | str:
    """host, host:port, [v6] or [v6]:port, lowercase (a rule may also write v6 bare).

    Returns a reason string when the text is none of these.
    """
    bracketed = text.startswith("[")
    port_text: str | None = None
    if bracketed:
        name, bracket, tail = text[1:].partition("]")
        if not bracket or (tail and not tail.startswith(":")):
            return f"host {text[:80]!r} is not a bracketed IPv6 address"
        port_text = tail[1:] if tail else None
    elif text.count(":") > 1:
        if not rule:
            return f"host {text[:80]!r}: write an IPv6 address in brackets, [v6]:port"
        name = text
    else:
        name, colon, after = text.partition(":")
        port_text = after if colon else None
        name = name.removesuffix(".") if name != "." else name  # "example.com." is example.com
    port: int | None = None
    if port_text is not None:
        if not (port_text.isdigit() and len(port_text) <= 5 and 0 < int(port_text) < 65536):
            return f"port {port_text[:20]!r} is not a number from 1 to 65535"
        port = int(port_text)
    if not name:
        return "the URL names no host"
    if bracketed or ":" in name or _NUMERIC.fullmatch(name.rsplit(".", 1)[-1]):
        try:
            ip = ipaddress.ip_address(name)
        except ValueError:
            return f"host {name[:80]!r} is not a canonical IP address (write a.b.c.d or [v6])"
        if bracketed and not isinstance(ip, ipaddress.IPv6Address):
            return f"host {name[:80]!r}: only an IPv6 address goes in brackets"
        if "%" in name:
            return f"host {name[:80]!r}: an IPv6 zone id cannot be allowed; drop the %zone"
        return _Host(ip.compressed, ip, port)
    if "%" in name or len(name) > 253 or not all(_LABEL.fullmatch(p) for p in name.split(".")):
        return f"host {name[:80]!r} is not a valid host name"
    return _Host(name, None, port)


def _segments(path: str) -> tuple[str, ...] | str:
    """The path's segments as a server reads them: unreserved escapes decoded, dot segments refused.

    Refused rather than resolved: a server that does not resolve `..` the same way would serve
    a path outside the prefix that was checked.
    """
    bad = _PCT.search(path)
    if bad is not None:
        return (
            f"the path has {bad.group(0)!r}, an encoded '/', '\\' or NUL or a malformed escape; "
            "send the path with plain separators"
        )
    parts = tuple(_ESCAPE.sub(_decode_unreserved, s) for s in path.split("/")[1:])
    if any(p in (".", "..") for p in parts):
        return "the path has '.' or '..' segments (perhaps percent-encoded); send the resolved path"
    return parts


def _decode_unreserved(match: re.Match[str]) -> str:
    char = chr(int(match.group(1), 16))
    return char if char in _UNRESERVED else "%" + match.group(1).upper()
