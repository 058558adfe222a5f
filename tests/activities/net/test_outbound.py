"""activities/net/outbound.py: resolve once, public addresses only, connect to what was checked.

Every test resolves through a resolver it controls (the system's is never asked: conftest) and
runs under a guard on connect, so no packet ever goes to an address that is not loopback.
"""

import json
import socket
import urllib.request
from ipaddress import ip_address

import pytest

from activities.net.outbound import (
    AddressRefused,
    OutboundClient,
    OutboundError,
    OutboundRefused,
    OutboundTimeout,
)
from schemas.error_codes import ErrorCode
from tests.support.outbound import NOT_PUBLIC, ScriptedResolver, Seen, serve, trickle
from tests.support.tls import make_certificates

LOOPBACK = ip_address("127.0.0.1")


def _client(
    answers: dict[str, list[list[str]]], **kwargs
) -> tuple[OutboundClient, ScriptedResolver]:
    resolver = ScriptedResolver(answers)
    return OutboundClient(resolver=resolver, **kwargs), resolver


def _get(client: OutboundClient, url: str, **kwargs):
    return client.send("GET", url, **{"timeout_s": 10.0, "max_body": 1 << 16, **kwargs})


@pytest.mark.parametrize(("address", "range_"), NOT_PUBLIC)
def test_a_name_that_resolves_to_an_address_that_is_not_public_is_refused_unsent(
    connects, address, range_
):
    client, resolver = _client({"api.example.com": [[address]]})
    with pytest.raises(AddressRefused) as refused:
        _get(client, "https://api.example.com/v1/items")
    err = refused.value
    assert err.code == ErrorCode.EGRESS_BLOCKED
    assert str(err).startswith(f"api.example.com resolved to {ip_address(address)} ({range_})")
    assert (err.host, err.address, err.range) == ("api.example.com", ip_address(address), range_)
    assert resolver.calls == [("api.example.com", 443)]
    assert connects == []  # decided before any connection was attempted


@pytest.mark.parametrize(
    "answer", [["93.184.216.34", "10.0.0.7"], ["10.0.0.7", "93.184.216.34"], ["8.8.8.8", "::1"]]
)
def test_one_address_that_is_not_public_among_public_ones_refuses_the_name(connects, answer):
    client, _ = _client({"mixed.example.com": [answer]})
    with pytest.raises(AddressRefused) as refused:
        _get(client, "http://mixed.example.com/")
    bad = next(a for a in answer if a in ("10.0.0.7", "::1"))
    assert f"mixed.example.com resolved to {bad} (" in str(refused.value)
    assert "one of the 2 addresses it resolves to" in str(refused.value)
    assert connects == []


def test_an_ip_url_is_judged_without_resolving_and_refused_unless_named(connects):
    client, resolver = _client({})
    with pytest.raises(AddressRefused, match=r"^127\.0\.0\.1 is loopback: only public"):
        _get(client, "http://127.0.0.1:9/")
    with pytest.raises(AddressRefused, match=r"^169\.254\.169\.254 is cloud metadata"):
        _get(client, "http://169.254.169.254/latest/meta-data/")
    with pytest.raises(AddressRefused, match=r"^::ffff:7f00:1 is IPv4-mapped form of 127"):
        _get(client, "http://[::ffff:127.0.0.1]:9/")
    assert resolver.calls == [] and connects == []


def test_a_named_ip_is_reached_and_only_that_ip(connects):
    client, resolver = _client({"near.example.com": [["127.0.0.2"]]})
    with serve() as site:
        response = _get(client, f"http://127.0.0.1:{site.port}/a?b=1", named=[LOOPBACK])
        assert response.status == 200 and not response.truncated
        assert json.loads(response.body) == {"path": "/a?b=1", "host": f"127.0.0.1:{site.port}"}
        # Naming 127.0.0.1 allows that address, not its neighbours or names that lead there.
        with pytest.raises(AddressRefused, match=r"resolved to 127\.0\.0\.2 \(loopback\)"):
            _get(client, f"http://near.example.com:{site.port}/", named=[LOOPBACK])
        assert site.seen == [Seen("GET", "/a?b=1", f"127.0.0.1:{site.port}")]
    assert connects == [("127.0.0.1", site.port)]
    assert resolver.calls == [("near.example.com", site.port)]


def test_the_connection_goes_to_the_address_checked_and_the_name_is_resolved_once(connects):
    # Rebinding: the first answer is checked and used; the name then points somewhere else.
    client, resolver = _client({"api.example.com": [["127.0.0.1"], ["10.9.9.9"]]})
    with serve() as site:
        url = f"http://api.example.com:{site.port}/v1"
        response = client.send(
            "POST", url, body=b"{}", timeout_s=10, max_body=100, named=[LOOPBACK]
        )
        assert response.status == 200
        assert resolver.calls == [("api.example.com", site.port)]
        assert connects == [("127.0.0.1", site.port)]
        # The Host header carries the name (and port) the URL gave, not the address.
        assert site.seen == [Seen("POST", "/v1", f"api.example.com:{site.port}")]
        # The next request resolves afresh, gets the new answer, and is judged on it.
        with pytest.raises(AddressRefused, match=r"resolved to 10\.9\.9\.9 \(private"):
            _get(client, url, named=[LOOPBACK])
    assert len(resolver.calls) == 2 and connects == [("127.0.0.1", site.port)]
    assert len(site.seen) == 1


def test_tls_uses_the_name_for_sni_host_and_certificate_while_connecting_to_the_checked_ip(
    tmp_path, connects
):
    certs = make_certificates(tmp_path, ["api.example.test"])
    client, _ = _client(
        {"api.example.test": [["127.0.0.1"]], "other.example.test": [["127.0.0.1"]]},
        tls=certs.client_context(),
    )
    with serve(tls=certs.server_context()) as site:
        response = _get(client, f"https://api.example.test:{site.port}/v1/x", named=[LOOPBACK])
        assert response.status == 200
        assert site.sni == ["api.example.test"]
        assert site.seen == [Seen("GET", "/v1/x", f"api.example.test:{site.port}")]
        # The certificate is checked against the URL's name, not the address connected to.
        with pytest.raises(OutboundError, match="TLS certificate not accepted: Hostname mismatch"):
            _get(client, f"https://other.example.test:{site.port}/", named=[LOOPBACK])
        # And against the system's trust store by default, which does not know the test CA.
        default, _ = _client({"api.example.test": [["127.0.0.1"]]})
        with pytest.raises(OutboundError, match="TLS certificate not accepted") as untrusted:
            _get(default, f"https://api.example.test:{site.port}/", named=[LOOPBACK])
        assert untrusted.value.code == ErrorCode.HTTP_ERROR
        assert len(site.seen) == 1  # no request went over a connection that failed verification
    assert {address for address, _ in connects} == {"127.0.0.1"}


def test_a_redirect_is_the_response_and_is_not_followed(connects):
    client, _ = _client({})
    with serve() as site:
        response = _get(client, f"http://127.0.0.1:{site.port}/redirect", named=[LOOPBACK])
        assert response.status == 302
        assert ("Location", "http://169.254.169.254/latest/meta-data/") in response.headers
        assert [s.path for s in site.seen] == ["/redirect"]
    assert len(connects) == 1


def test_proxy_variables_are_ignored(monkeypatch, connects):
    client, _ = _client({})
    with serve() as site, serve() as proxy:
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
            monkeypatch.setenv(name, f"http://127.0.0.1:{proxy.port}")
            monkeypatch.setenv(name.lower(), f"http://127.0.0.1:{proxy.port}")
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        url = f"http://127.0.0.1:{site.port}/page"
        # The variables are live: urllib's default opener sends the request to the proxy.
        # (A fresh opener: urlopen's is built once per process and would keep this proxy.)
        with urllib.request.build_opener().open(url, timeout=10) as via_proxy:
            assert via_proxy.status == 200
        assert [s.path for s in proxy.seen] == [url] and site.seen == []
        response = _get(client, url, named=[LOOPBACK])
        assert response.status == 200
        assert [s.path for s in site.seen] == ["/page"]
        assert len(proxy.seen) == 1  # the client's request never went near it


def test_the_body_is_cut_at_the_cap_and_says_so(connects):
    client, _ = _client({})
    with serve() as site:
        base = f"http://127.0.0.1:{site.port}/bytes"
        whole = _get(client, f"{base}/1000", max_body=1000, named=[LOOPBACK])
        cut = _get(client, f"{base}/5000", max_body=1000, named=[LOOPBACK])
        empty = client.send("HEAD", f"{base}/10", timeout_s=10, max_body=0, named=[LOOPBACK])
    assert (len(whole.body), whole.truncated) == (1000, False)
    assert (cut.body, cut.truncated) == (b"x" * 1000, True)
    assert (empty.status, empty.body, empty.truncated) == (200, b"", False)


@pytest.mark.parametrize("part", ["headers", "body"])
def test_a_server_that_trickles_bytes_is_cut_off_at_the_deadline(connects, part):
    # Each byte arrives well inside any socket timeout: only the request's deadline ends it.
    # A body without a length ends at EOF, so a cut body must not come back as a short 200.
    client, _ = _client({})
    with trickle(part) as slow:
        with pytest.raises(OutboundTimeout, match=r"no complete response within 0\.5 s") as err:
            _get(client, f"http://127.0.0.1:{slow.port}/", timeout_s=0.5, named=[LOOPBACK])
    assert err.value.code == ErrorCode.HTTP_TIMEOUT


def test_a_tls_server_that_never_answers_the_handshake_times_out(tmp_path, connects):
    certs = make_certificates(tmp_path, ["api.example.test"])
    client, _ = _client({"api.example.test": [["127.0.0.1"]]}, tls=certs.client_context())
    with socket.create_server(("127.0.0.1", 0)) as silent:  # accepts TCP, says nothing
        port = silent.getsockname()[1]
        with pytest.raises(OutboundTimeout):
            _get(client, f"https://api.example.test:{port}/", timeout_s=0.5, named=[LOOPBACK])


def test_failures_without_a_response_name_what_failed(connects):
    client, _ = _client({"gone.example.com": [[]]})
    with socket.create_server(("127.0.0.1", 0)) as closed:
        port = closed.getsockname()[1]
    with pytest.raises(OutboundError, match=f"could not connect to 127.0.0.1 port {port}: "):
        _get(client, f"http://127.0.0.1:{port}/", named=[LOOPBACK])
    with pytest.raises(OutboundError, match="nowhere.example.com could not be resolved"):
        _get(client, "https://nowhere.example.com/")
    with pytest.raises(OutboundError, match="gone.example.com resolved to no address"):
        _get(client, "https://gone.example.com/")
    with pytest.raises(OutboundRefused, match="carries credentials"):
        _get(client, "https://user:pw@api.example.com/")
    with pytest.raises(ValueError, match=r"\['Host'\] are set by the outbound client"):
        _get(client, "https://api.example.com/", headers={"Host": "evil.example"})
    assert connects == [("127.0.0.1", port)]
