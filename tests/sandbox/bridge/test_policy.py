"""The bridge's policy: allowed tools, step and run budgets, refusal caps, HTTP egress.

Everything is real: bwrap, the Unix socket, the SQLite event store, the local artifact store, and
for http.request a local http.server (the BRIDGE makes the request; the sandbox has no network).
"""

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from activities.sandbox.bridge import MAX_UNCHARGED
from activities.sandbox.bridge_tools import MAX_HTTP_BODY
from compiler.budget import usage_from_events
from schemas.profile import EgressPolicy, EgressRule
from tests.sandbox.bridge.support import (
    Counting,
    evaluate_handler,
    events_of,
    policy,
    run_step,
    step_result,
)
from tests.support.sandbox import needs_bwrap


@needs_bwrap
def test_a_tool_outside_allowed_tool_ids_is_refused_recorded_and_never_invoked(
    tmp_path, store, artifacts
):
    evaluate = Counting(evaluate_handler)
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("artifact.evaluate", {"path": "output/report.md"}))
        emit(call("shell.exec", {"cmd": "id"}))
        emit(call("log.note", {"text": "still served"}))
        """,
        bridge_policy=policy(allowed_tool_ids=["log.note"]),
        handlers={"artifact.evaluate": evaluate},
    )
    evaluated, unknown, note = step_result(out)
    assert evaluated[:2] == ["err", "TOOL_NOT_ALLOWED"]
    assert "may not call artifact.evaluate" in evaluated[2] and "allows log.note" in evaluated[2]
    assert unknown[:2] == ["err", "UNKNOWN_TOOL"] and "shell.exec" in unknown[2]
    assert note[0] == "ok"
    assert evaluate.calls == []
    refused = events_of(store, "tool.refused.v1")
    assert [(r.payload["tool"], r.payload["failure_class"]) for r in refused] == [
        ("artifact.evaluate", "TOOL_NOT_ALLOWED"),
        ("shell.exec", "UNKNOWN_TOOL"),
    ]
    assert [c.payload["tool"] for c in events_of(store, "tool.called.v1")] == ["log.note"]
    assert usage_from_events(events_of(store)).bridge_calls == 1  # refusals are not usage


@needs_bwrap
def test_the_step_budget_counts_every_attempt_and_a_retry_replays_what_it_paid_for(
    tmp_path, store, artifacts
):
    calls = """
        for n in range(3):
            emit(call("log.note", {"text": f"note {n}"}))
    """
    _, out = run_step(tmp_path, store, artifacts, calls, bridge_policy=policy(bridge_call_budget=2))
    first, second, third = step_result(out)
    assert first[0] == second[0] == "ok"
    assert third[:2] == ["err", "BUDGET_EXHAUSTED"]
    assert "used 2 of its 2 bridge calls" in third[2] and "bridge_calls_per_step" in third[2]
    assert len(events_of(store, "tool.called.v1")) == 2
    assert events_of(store, "tool.refused.v1")[0].payload["failure_class"] == "BUDGET_EXHAUSTED"

    # Attempt 2: the calls attempt 1 paid for are answered again, new ones are over budget.
    _, out = run_step(
        tmp_path, store, artifacts, calls, bridge_policy=policy(bridge_call_budget=2, attempt=2)
    )
    again = step_result(out)
    assert again[:2] == [first, second]
    assert again[2][:2] == ["err", "BUDGET_EXHAUSTED"]
    assert len(events_of(store, "tool.called.v1")) == 2
    replayed = events_of(store, "tool.replayed.v1")
    assert [r.payload["attempt"] for r in replayed] == [2, 2]
    assert usage_from_events(events_of(store), attempt=2).bridge_calls == 0


@needs_bwrap
def test_an_exhausted_run_budget_refuses_before_the_handler_runs(tmp_path, store, artifacts):
    evaluate = Counting(evaluate_handler)
    reason = "recorded usage 1,000 tokens reached the run's cap of 1,000"
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        'emit(call("artifact.evaluate", {"path": "output/a.md"}))',
        handlers={"artifact.evaluate": evaluate},
        run_budget_refusal=lambda: reason,
    )
    [[refused]] = out
    assert refused == ["err", "BUDGET_EXHAUSTED", reason]
    assert evaluate.calls == []
    [event] = events_of(store, "tool.refused.v1")
    assert event.payload["reason"] == reason and not events_of(store, "tool.called.v1")


@needs_bwrap
def test_refused_calls_are_capped_so_a_loop_cannot_flood_the_event_log(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        f"""
        seen = [call("nope", {{"n": n}})[1] for n in range({MAX_UNCHARGED + 20})]
        emit(seen.count("UNKNOWN_TOOL"), seen.count("BRIDGE_OVERLOADED"))
        """,
    )
    assert out == [[MAX_UNCHARGED, 20]]
    refused = events_of(store, "tool.refused.v1")
    assert len(refused) == MAX_UNCHARGED + 1
    assert refused[-1].payload["failure_class"] == "BRIDGE_OVERLOADED"


class _Site(BaseHTTPRequestHandler):
    seen: list[tuple[str, str, str | None]]

    def _reply(self) -> None:
        self.seen.append((self.command, self.path, self.headers.get("Authorization")))
        if self.path == "/public/redirect":
            self.send_response(302)
            self.send_header("Location", "/private/secret")
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if self.path == "/public/slow":
            time.sleep(2)
        if self.path == "/public/big":
            body = bytes(range(256)) * (MAX_HTTP_BODY // 256) + b"0123456789"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        body = json.dumps({"path": self.path}).encode()
        self.send_response(200 if self.path.startswith("/public/") else 404)
        self.send_header("Content-Type", "application/json")
        self.send_header("Set-Cookie", "session=abc")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_HEAD = _reply

    def log_message(self, *_args: Any) -> None:
        pass


@pytest.fixture
def site() -> Iterator[tuple[int, list[tuple[str, str, str | None]]]]:
    seen: list[tuple[str, str, str | None]] = []
    handler = type("Site", (_Site,), {"seen": seen})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True  # the slow endpoint must not hold up the fixture's teardown
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1], seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@needs_bwrap
def test_http_request_goes_out_only_where_the_allowlist_says(tmp_path, store, artifacts, site):
    port, seen = site
    egress = EgressPolicy(
        allow=[EgressRule(domain=f"127.0.0.1:{port}", path_prefix="/public", methods=["GET"])]
    )
    base = f"http://127.0.0.1:{port}"
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        f"""
        base = {base!r}
        emit(call("http.request", {{"url": base + "/public/data.json",
                                    "headers": {{"Authorization": "Bearer s3cret"}}}}))
        emit(call("http.request", {{"url": base + "/private/data.json"}}))
        emit(call("http.request", {{"method": "POST", "url": base + "/public/data.json"}}))
        emit(call("http.request", {{"url": "http://127.0.0.2:{port}/public/x"}}))
        emit(call("http.request", {{"url": base + "/public/../private/x"}}))
        emit(call("http.request", {{"url": base + "/public/redirect"}}))
        """,
        bridge_policy=policy(egress=egress),
    )
    ok, private, post, other_host, dotted, redirect = step_result(out)
    assert ok[0] == "ok" and ok[1]["status"] == 200
    assert json.loads(ok[1]["body"]) == {"path": "/public/data.json"}
    assert all(k.lower() != "set-cookie" for k, _ in ok[1]["headers"])
    assert private[:2] == post[:2] == other_host[:2] == dotted[:2] == ["err", "EGRESS_BLOCKED"]
    assert "outside its path prefix /public" in private[2]
    assert "method POST is not one of GET" in post[2]
    assert "no egress rule names host 127.0.0.2" in other_host[2]
    assert redirect[0] == "ok" and redirect[1]["status"] == 302
    assert ["Location", "/private/secret"] in redirect[1]["headers"]
    # Only the allowed requests reached the server; the redirect was not followed.
    assert seen == [
        ("GET", "/public/data.json", "Bearer s3cret"),
        ("GET", "/public/redirect", None),
    ]
    refused = events_of(store, "tool.refused.v1")
    assert [r.payload["failure_class"] for r in refused] == ["EGRESS_BLOCKED"] * 4
    called = events_of(store, "tool.called.v1")
    assert len(called) == 2 and usage_from_events(events_of(store)).bridge_calls == 2
    stored = json.dumps([e.payload for e in events_of(store)])
    assert "s3cret" not in stored and "<redacted>" in stored  # header values are never logged


@needs_bwrap
def test_http_bodies_are_capped_and_timeouts_are_failed_calls(tmp_path, store, artifacts, site):
    port, _ = site
    egress = EgressPolicy(
        allow=[EgressRule(domain=f"127.0.0.1:{port}", path_prefix="/public", methods=["GET"])]
    )
    base = f"http://127.0.0.1:{port}/public"
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        f"""
        import base64
        status, big = call("http.request", {{"url": "{base}/big"}})
        emit(status, big["truncated"], "body" in big, len(base64.b64decode(big["body_base64"])))
        emit(call("http.request", {{"url": "{base}/slow", "timeout_s": 0.5}}))
        emit(call("http.request", {{"url": "{base}/x", "headers": {{"Host": "evil.com"}}}}))
        emit(call("http.request", {{"url": "{base}/x", "timeout_s": 600}}))
        """,
        bridge_policy=policy(egress=egress),
    )
    big, slow, host, forever = out
    assert big == ["ok", True, False, MAX_HTTP_BODY]
    slow, host, forever = slow[0], host[0], forever[0]
    assert slow[:2] == ["err", "HTTP_TIMEOUT"] and "0.5 s" in slow[2]
    assert host[:2] == ["err", "BAD_ARGS"] and "Host is set by the bridge" in host[2]
    assert forever[:2] == ["err", "BAD_ARGS"] and "at most 120" in forever[2]
    called = events_of(store, "tool.called.v1")
    assert [c.payload["ok"] for c in called] == [True, False]  # BAD_ARGS is refused, not charged
    assert "result_ref" in called[0].payload["detail"]
