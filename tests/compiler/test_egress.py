"""compiler/egress.py: the http.request allowlist, including the ways out people try."""

from ipaddress import ip_address

import pytest

from compiler.egress import RequestTarget, egress_decision, named_ip, request_target
from schemas.profile import EgressPolicy, EgressRule

POLICY = EgressPolicy(
    allow=[
        EgressRule(domain="api.example.com", path_prefix="/v1", methods=["GET", "POST"]),
        EgressRule(domain="example.org", include_subdomains=True),
        EgressRule(domain="files.example.net:8443", path_prefix="/public/"),
        EgressRule(domain="127.0.0.1:8080", path_prefix="/", methods=["GET", "HEAD"]),
        EgressRule(domain="[::1]:9000"),
        EgressRule(domain="Docs.Example.COM."),
    ]
)

# (method, url, allowed, rule index, words the reason must hold)
CASES = [
    # exact host, path prefix, method
    ("GET", "https://api.example.com/v1/items?id=3", True, 0, "rule 0"),
    ("get", "https://api.example.com/v1", True, 0, "rule 0"),
    ("POST", "http://api.example.com/v1/", True, 0, "rule 0"),
    ("DELETE", "https://api.example.com/v1/items", False, None, "method DELETE"),
    ("GET", "https://api.example.com/v2/items", False, None, "outside its path prefix /v1"),
    ("GET", "https://api.example.com/v1x", False, None, "outside its path prefix"),
    ("GET", "https://api.example.com/", False, None, "outside its path prefix"),
    ("GET", "https://API.EXAMPLE.COM/v1/a", True, 0, "rule 0"),
    ("GET", "https://api.example.com./v1/a", True, 0, "rule 0"),
    ("GET", "https://api.example.com:443/v1/a", True, 0, "rule 0"),
    ("GET", "http://api.example.com:80/v1/a", True, 0, "rule 0"),
    # subdomains: only with include_subdomains, and never by suffix
    ("GET", "https://x.api.example.com/v1", False, None, "no egress rule names host"),
    ("GET", "https://example.org/a", True, 1, "rule 1"),
    ("GET", "https://deep.sub.example.org/a", True, 1, "rule 1"),
    ("GET", "https://evilexample.org/a", False, None, "no egress rule names host evilexample"),
    ("GET", "https://example.org.evil.com/a", False, None, "no egress rule names host"),
    ("GET", "https://notapi.example.com/v1", False, None, "no egress rule names host"),
    ("GET", "https://docs.example.com/anything", True, 5, "rule 5"),
    # ports: the rule's explicit port, else only the scheme's default
    ("GET", "https://files.example.net:8443/public/a.csv", True, 2, "rule 2"),
    ("GET", "https://files.example.net/public/a.csv", False, None, "port 443 is not its port 8443"),
    ("GET", "https://files.example.net:8443/public", True, 2, "rule 2"),
    ("GET", "https://files.example.net:8443/publicity", False, None, "outside"),
    ("GET", "https://api.example.com:8443/v1/a", False, None, "port 8443 is not its port 443"),
    ("GET", "https://api.example.com:0/v1", False, None, "not a number from 1 to 65535"),
    ("GET", "https://api.example.com:99999/v1", False, None, "not a number"),
    ("GET", "https://api.example.com:/v1", False, None, "not a number"),
    # IP literals: only the exact IP a rule names
    ("GET", "http://127.0.0.1:8080/x", True, 3, "rule 3"),
    ("HEAD", "http://127.0.0.1:8080/", True, 3, "rule 3"),
    ("POST", "http://127.0.0.1:8080/x", False, None, "method POST"),
    ("GET", "http://127.0.0.1/x", False, None, "port 80 is not its port 8080"),
    ("GET", "http://127.0.0.2:8080/x", False, None, "no egress rule names host 127.0.0.2"),
    ("GET", "http://127.1:8080/x", False, None, "not a canonical IP address"),
    ("GET", "http://2130706433:8080/x", False, None, "not a canonical IP address"),
    ("GET", "http://0x7f.0.0.1:8080/x", False, None, "not a canonical IP address"),
    ("GET", "http://0177.0.0.1:8080/x", False, None, "not a canonical IP address"),
    ("GET", "http://127.0.0.1.:8080/x", True, 3, "rule 3"),
    ("GET", "http://[::ffff:127.0.0.1]:8080/x", False, None, "no egress rule names host"),
    ("GET", "http://[::1]:9000/x", True, 4, "rule 4"),
    ("GET", "http://[0:0:0:0:0:0:0:1]:9000/x", True, 4, "rule 4"),
    ("GET", "http://[127.0.0.1]:8080/x", False, None, "only an IPv6 address goes in brackets"),
    ("GET", "http://::1:9000/x", False, None, "in brackets"),
    ("GET", "http://[fe80::1%25eth0]:9000/x", False, None, "zone id"),
    # userinfo and parser confusion
    ("GET", "https://user:pw@api.example.com/v1", False, None, "credentials"),
    ("GET", "https://api.example.com@evil.com/v1", False, None, "credentials"),
    ("GET", "https://evil.com\\@api.example.com/v1", False, None, "percent-encoded"),
    ("GET", "https://api.example.com/v1/ a", False, None, "percent-encoded"),
    ("GET", "https://api.example.com/v1/\u00e9", False, None, "percent-encoded"),
    ("GET", "https://b\u00fccher.example.org/", False, None, "percent-encoded"),
    ("GET", "https://xn--bcher-kva.example.org/", True, 1, "rule 1"),
    ("GET", "https://api.example.com#@evil.com/v1", False, None, "outside its path prefix"),
    ("GET", "https://api.exa%6dple.com/v1", False, None, "not a valid host name"),
    ("GET", "https://-bad.example.org/", False, None, "not a valid host name"),
    # schemes
    ("GET", "ftp://api.example.com/v1", False, None, "scheme 'ftp'"),
    ("GET", "file:///etc/passwd", False, None, "scheme 'file'"),
    ("GET", "api.example.com/v1", False, None, "no scheme"),
    ("GET", "https:api.example.com/v1", False, None, "no //host"),
    ("GET", "https:///v1", False, None, "names no host"),
    ("GET", "HTTPS://api.example.com/v1/a", True, 0, "rule 0"),
    # path normalization: escapes of unreserved characters decoded, dot segments refused
    ("GET", "https://api.example.com/%76%31/items", True, 0, "rule 0"),
    ("GET", "https://api.example.com/v%31x/items", False, None, "outside"),
    ("GET", "https://api.example.com/v1/../admin", False, None, "'..' segments"),
    ("GET", "https://api.example.com/v1/%2e%2e/admin", False, None, "'..' segments"),
    ("GET", "https://api.example.com/v1/.%2E/admin", False, None, "'..' segments"),
    ("GET", "https://api.example.com/v1/./a", False, None, "'..' segments"),
    ("GET", "https://api.example.com/v1%2F..%2Fadmin", False, None, "encoded '/'"),
    ("GET", "https://api.example.com/v1%5cadmin", False, None, "encoded '/'"),
    ("GET", "https://api.example.com/v1/%zz", False, None, "malformed escape"),
    ("GET", "https://api.example.com/v1/%00", False, None, "NUL"),
    ("GET", "https://api.example.com//v1/a", False, None, "outside its path prefix"),
    ("GET", "https://api.example.com/v1/a%2Fb", False, None, "encoded '/'"),
    # methods the bridge never sends
    ("CONNECT", "https://api.example.com/v1", False, None, "only DELETE, GET"),
    ("TRACE", "https://api.example.com/v1", False, None, "only"),
]


@pytest.mark.parametrize(("method", "url", "allowed", "rule", "words"), CASES)
def test_egress_table(method, url, allowed, rule, words):
    decision = egress_decision(method, url, POLICY)
    assert (decision.allowed, decision.rule_index) == (allowed, rule), decision.reason
    assert words in decision.reason
    assert (decision.target is not None) == allowed


def test_target_is_rebuilt_from_the_checked_parts():
    decision = egress_decision("GET", "HTTPS://API.example.com.:443/v1/a?q=1#frag", POLICY)
    assert decision.target == "https://api.example.com:443/v1/a?q=1"
    decision = egress_decision("GET", "http://[0::1]:9000", POLICY)
    assert decision.target == "http://[::1]:9000/"


def test_reasons_never_echo_credentials_or_the_query():
    leaked = egress_decision("GET", "https://bob:hunter2@api.example.com/v1", POLICY)
    assert "hunter2" not in leaked.reason and "bob" not in leaked.reason
    blocked = egress_decision("GET", "https://api.example.com/v2?token=abc123", POLICY)
    assert not blocked.allowed and "abc123" not in blocked.reason
    assert "query omitted" in blocked.reason


def test_an_empty_allowlist_blocks_everything_and_says_how_to_open_it():
    decision = egress_decision("GET", "https://example.com/", EgressPolicy())
    assert not decision.allowed
    assert "allows no egress at all" in decision.reason and "egress.allow" in decision.reason


def test_a_malformed_rule_never_matches_and_the_next_one_still_can():
    policy = EgressPolicy(
        allow=[
            EgressRule(domain="*.example.com"),
            EgressRule(domain="https://example.com"),
            EgressRule(domain="example.com", path_prefix="v1"),
            EgressRule(domain="example.com"),
        ]
    )
    decision = egress_decision("GET", "https://example.com/a", policy)
    assert decision.allowed and decision.rule_index == 3
    only_bad = EgressPolicy(allow=policy.allow[:3])
    assert not egress_decision("GET", "https://example.com/a", only_bad).allowed


def test_a_bare_ipv6_rule_matches_the_bracketed_url():
    policy = EgressPolicy(allow=[EgressRule(domain="::1")])
    assert egress_decision("GET", "http://[::1]/", policy).allowed
    assert not egress_decision("GET", "http://[::2]/", policy).allowed


def test_a_root_prefix_admits_every_path_and_a_later_rule_may_admit_what_an_earlier_refuses():
    policy = EgressPolicy(
        allow=[
            EgressRule(domain="example.com", path_prefix="/read", methods=["GET"]),
            EgressRule(domain="example.com", path_prefix="/write", methods=["POST"]),
        ]
    )
    assert egress_decision("POST", "https://example.com/write/x", policy).rule_index == 1
    refused = egress_decision("POST", "https://example.com/read/x", policy)
    assert not refused.allowed and "rule 0" in refused.reason
    root = EgressPolicy(allow=[EgressRule(domain="example.com", path_prefix="/")])
    assert egress_decision("GET", "https://example.com", root).allowed
    assert egress_decision("GET", "https://example.com/a/b/c?d", root).allowed


def test_the_request_target_is_what_the_allowlist_checked():
    decision = egress_decision("GET", "HTTPS://API.example.com.:443/v1/a?q=1#frag", POLICY)
    assert decision.target is not None
    assert request_target(decision.target) == RequestTarget(
        "https", "api.example.com", None, 443, "/v1/a?q=1"
    )
    assert request_target("http://[0::1]:9000") == RequestTarget(
        "http", "::1", ip_address("::1"), 9000, "/"
    )
    assert request_target("http://127.0.0.1/x") == RequestTarget(
        "http", "127.0.0.1", ip_address("127.0.0.1"), 80, "/x"
    )
    refused = request_target("https://bob:pw@example.com/")
    assert isinstance(refused, str) and "credentials" in refused


@pytest.mark.parametrize(
    ("domain", "ip"),
    [
        ("127.0.0.1:8080", "127.0.0.1"),
        ("10.0.0.5", "10.0.0.5"),
        ("[::1]:9000", "::1"),
        ("::1", "::1"),
        ("api.example.com", None),
        ("localhost", None),  # a name, however local, never names an address
        ("127.1", None),  # malformed: matches nothing, names nothing
    ],
)
def test_only_a_rule_that_names_an_ip_itself_names_an_address(domain, ip):
    named = named_ip(EgressRule(domain=domain))
    assert named == (None if ip is None else ip_address(ip))
