"""http.request and the addresses behind allowlisted names (issue 18 §3).

The allowlist judges a URL's host *name*; what the name resolves to is the outbound client's to
judge. Names are answered by a socket.getaddrinfo the test controls (no real DNS), and a guard
on connect fails the test before any packet could go to an address that is not loopback.
"""

import json
import urllib.request
from typing import Any

import pytest

from activities.net.outbound import OutboundClient
from activities.sandbox.bridge import BridgeLedger
from activities.sandbox.bridge_call import BridgeCall, ToolRefused
from activities.sandbox.bridge_tools import HttpRequest
from compiler.egress import egress_decision
from schemas.error_codes import ErrorCode
from schemas.profile import EgressPolicy, EgressRule
from tests.sandbox.bridge.support import STARTED, events_of, policy, run_step, step_result
from tests.support.outbound import Seen, answer_names, guard_connects, serve
from tests.support.sandbox import needs_bwrap


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *_args: Any, **_kwargs: Any) -> None:
        return None


def _todays_fetch(url: str) -> bytes:
    """What http.request did before the outbound client: urllib resolves and connects itself."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}), _NoRedirect())
    with opener.open(url, timeout=10) as response:
        return response.read()


def test_an_allowlisted_name_that_resolves_to_loopback_was_reached_and_is_now_refused(
    monkeypatch, store, artifacts
):
    connects = guard_connects(monkeypatch)
    asked = answer_names(monkeypatch, {"api.example.com": ["127.0.0.1"]})
    with serve() as site:
        egress = EgressPolicy(
            allow=[EgressRule(domain=f"api.example.com:{site.port}", path_prefix="/public")]
        )
        url = f"http://api.example.com:{site.port}/public/data.json"
        decision = egress_decision("GET", url, egress)
        assert decision.allowed and decision.target == url  # the allowlist is satisfied

        # The hole: the name passed the allowlist, then urllib resolved it to 127.0.0.1.
        page = json.loads(_todays_fetch(decision.target))
        assert page == {"path": "/public/data.json", "host": f"api.example.com:{site.port}"}
        assert len(site.seen) == 1 and connects == [("127.0.0.1", site.port)]

        # The bridge now: the same request, judged on the address, refused before connecting.
        pol = policy(egress=egress)
        ledger = BridgeLedger(
            store, artifacts, policy=pol, caused_by=STARTED, run_budget_refusal=lambda: None
        )
        call = BridgeCall(pol, "http.request", "key", None, 0, ledger)
        with pytest.raises(ToolRefused) as refused:
            HttpRequest(OutboundClient())({"url": url}, call)
        assert refused.value.failure_class == ErrorCode.EGRESS_BLOCKED
        assert refused.value.reason == (
            f"GET http://api.example.com:{site.port}/public/data.json: api.example.com resolved "
            "to 127.0.0.1 (loopback): the bridge only connects to public addresses; name the "
            "IP itself in an egress rule to allow it"
        )
        assert len(site.seen) == 1  # the loopback server saw no second request
    assert connects == [("127.0.0.1", site.port)]  # and the bridge opened no connection
    assert asked == ["api.example.com", "api.example.com"]  # once by urllib, once by the bridge


@needs_bwrap
def test_step_code_reaches_only_public_addresses_or_an_ip_a_rule_names(
    monkeypatch, tmp_path, store, artifacts
):
    connects = guard_connects(monkeypatch)
    answer_names(
        monkeypatch,
        {
            "api.example.com": ["127.0.0.1"],
            "metadata.example.com": ["169.254.169.254"],
            "mixed.example.com": ["93.184.216.34", "10.0.0.7"],
            "v6.example.com": ["::ffff:127.0.0.1"],
        },
    )
    with serve() as site:
        port = site.port
        names = ["api.example.com", "metadata.example.com", "mixed.example.com", "v6.example.com"]
        rules = [EgressRule(domain=f"{n}:{port}") for n in names]
        rules.append(EgressRule(domain=f"127.0.0.1:{port}"))  # names the IP: allowed
        _, out = run_step(
            tmp_path,
            store,
            artifacts,
            f"""
            for host in {names + ["127.0.0.1"]!r}:
                emit(call("http.request", {{"url": f"http://{{host}}:{port}/x"}}))
            """,
            bridge_policy=policy(egress=EgressPolicy(allow=rules)),
        )
        loopback, metadata, mixed, mapped, named = step_result(out)
        assert site.seen == [Seen("GET", "/x", f"127.0.0.1:{port}")]
    assert named[0] == "ok" and named[1]["status"] == 200
    for refused in (loopback, metadata, mixed, mapped):
        assert refused[:2] == ["err", "EGRESS_BLOCKED"]
        assert refused[2].endswith(
            "the bridge only connects to public addresses; name the IP itself in an egress "
            "rule to allow it"
        )
    assert "api.example.com resolved to 127.0.0.1 (loopback)" in loopback[2]
    assert "resolved to 169.254.169.254 (cloud metadata)" in metadata[2]
    assert "resolved to 10.0.0.7 (private 10.0.0.0/8, one of the 2 addresses" in mixed[2]
    assert "(IPv4-mapped form of 127.0.0.1, loopback)" in mapped[2]
    assert connects == [("127.0.0.1", port)]
    refusals = events_of(store, "tool.refused.v1")
    assert [r.payload["failure_class"] for r in refusals] == ["EGRESS_BLOCKED"] * 4
    assert len(events_of(store, "tool.called.v1")) == 1  # refusals are recorded, not charged
