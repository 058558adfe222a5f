"""The governed tool bridge end to end: sandboxed code -> forge_bridge -> BridgeServer -> stores.

Everything is real: bwrap, the Unix socket, the SQLite event store, the local artifact store, and
for http.request a local http.server (the BRIDGE makes the request; the sandbox has no network).
"""

import json
import os
import shutil
import stat
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from activities.sandbox.bridge import (
    MAX_UNCHARGED,
    BridgeCall,
    BridgeLedger,
    BridgeServer,
    ToolError,
)
from activities.sandbox.bridge_ledger import INLINE_RESULT_BYTES
from activities.sandbox.bridge_tools import MAX_HTTP_BODY, builtin_handlers
from activities.sandbox.bwrap import sandbox_identity
from activities.sandbox.runner import SandboxLimits, SandboxResult, run_sandboxed
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.sandbox.workspace import ensure_layout
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore, open_event_store
from compiler.budget import usage_from_events
from schemas.bridge import BridgePolicy
from schemas.events import Event, EventDraft
from schemas.profile import EgressPolicy, EgressRule

needs_bwrap = pytest.mark.skipif(
    shutil.which("bwrap") is None, reason="bubblewrap is not installed (make system-deps)"
)
LIMITS = SandboxLimits(
    cpu_seconds=30,
    memory_mb=1024,
    file_size_mb=16,
    max_processes=32,
    max_open_files=128,
    wall_clock_s=60,
    output_cap_bytes=1 << 20,
)
RUN = "run-bridge"
STEP = "fetch"
STREAM = f"{RUN}:step:{STEP}"
STARTED = f"{RUN}:step.started.v1:{STEP}:1"
# Prepended to every step: call() returns ["ok", result] or ["err", class, message].
PRELUDE = """
import json, sys
import forge_bridge

def call(tool, args=None, key=None):
    try:
        return ["ok", forge_bridge.call(tool, args, key=key, timeout=60)]
    except forge_bridge.BridgeError as exc:
        return ["err", exc.failure_class, exc.message]

def emit(*values):
    print(json.dumps(values))
"""
PROOF = {
    "proof_id": "proof-1",
    "model_call_id": "model-call-7",
    "bundle_sha256": "sha256:" + "ab" * 32,
    "verdict": "pass",
    "criteria": [
        {"criterion": "totals reconcile", "result": "pass", "rationale": "sums match"},
        {"criterion": "no placeholders", "result": "pass", "rationale": "none found"},
    ],
}


@pytest.fixture
def store(tmp_path: Path) -> Iterator[EventStore]:
    with open_event_store(f"sqlite:///{tmp_path / 'forge.db'}") as events:
        now = datetime.now(UTC)
        run_started = EventDraft(
            event_id=f"{RUN}:run.started.v1", type="run.started.v1", run_id=RUN, timestamp=now
        )
        events.append([run_started], stream_id=f"{RUN}:run")
        started = EventDraft(
            event_id=STARTED,
            type="step.started.v1",
            run_id=RUN,
            caused_by=run_started.event_id,
            timestamp=now,
            payload={"step_key": STEP, "attempt": 1},
        )
        events.append([started], stream_id=STREAM)
        yield events


@pytest.fixture
def artifacts(tmp_path: Path) -> LocalArtifactStore:
    return LocalArtifactStore(tmp_path / "artifacts")


def policy(**overrides: Any) -> BridgePolicy:
    base: dict[str, Any] = {
        "run_id": RUN,
        "step_key": STEP,
        "attempt": 1,
        "contract_hash": "sha256:" + "c0" * 32,
        "allowed_tool_ids": ["log.note", "artifact.evaluate", "http.request"],
        "bridge_call_budget": 10,
    }
    return BridgePolicy(**{**base, **overrides})


class Counting:
    """A tool handler that counts its invocations (and may return something else)."""

    def __init__(self, result: Callable[[dict[str, Any], BridgeCall], Any]) -> None:
        self.calls: list[dict[str, Any]] = []
        self._result = result

    def __call__(self, args: dict[str, Any], call: BridgeCall) -> Any:
        self.calls.append(args)
        return self._result(args, call)


def evaluate_handler(args: dict[str, Any], call: BridgeCall) -> dict[str, Any]:
    """The test's artifact.evaluate: returns a proof and records it as evaluation.proof.v1."""
    call.emit("evaluation.proof.v1", PROOF)
    return {**PROOF, "subject": args.get("path")}


def run_step(
    tmp_path: Path,
    store: EventStore,
    artifacts: LocalArtifactStore,
    code: str,
    *,
    bridge_policy: BridgePolicy | None = None,
    handlers: dict[str, Any] | None = None,
    run_budget_refusal: Callable[[], str | None] = lambda: None,
    isolation: str = "bwrap",
    workspace: Path | None = None,
) -> tuple[SandboxResult, list[Any]]:
    """Serve a bridge for one attempt and run `code` in the sandbox against it."""
    ws = workspace or tmp_path / "ws"
    if ws.exists():
        shutil.rmtree(ws)
    ensure_layout(ws)
    (ws / "meta" / "step.py").write_text(PRELUDE + textwrap.dedent(code))
    pol = bridge_policy or policy()
    ledger = BridgeLedger(
        store, artifacts, policy=pol, caused_by=STARTED, run_budget_refusal=run_budget_refusal
    )
    all_handlers = {**builtin_handlers(), "artifact.evaluate": evaluate_handler, **(handlers or {})}
    with BridgeServer(
        ws / "meta" / "bridge.sock", policy=pol, handlers=all_handlers, ledger=ledger
    ):
        result = run_sandboxed(
            ["python", "/workspace/meta/step.py"],
            workspace=ws,
            limits=LIMITS,
            isolation=isolation,  # type: ignore[arg-type]
            bridge=True,
        )
    assert result.exit_code == 0, result.stderr
    assert result.violations == []
    assert not (ws / "meta" / "bridge.sock").exists(), "the bridge removes its socket"
    return result, [json.loads(line) for line in result.stdout.splitlines()]


def events_of(store: EventStore, type_: str | None = None) -> list[Event]:
    return [e for e in store.read_stream(STREAM) if type_ is None or e.type == type_]


@needs_bwrap
def test_log_note_is_a_recorded_bridge_call(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("log.note", {"text": "read 120 rows", "level": "info"}))
        emit(call("log.note", {"text": "x" * 5000}))
        """,
    )
    (first,), (second,) = out
    assert first[0] == "ok" and first[1]["truncated"] is False
    assert second[0] == "ok" and second[1]["truncated"] is True
    notes = events_of(store, "log.noted.v1")
    assert [n.payload["text"] for n in notes] == ["read 120 rows", "x" * 4096]
    assert notes[0].event_id == first[1]["event_id"]
    assert notes[0].payload["call_index"] == 0 and notes[0].caused_by == STARTED
    called = events_of(store, "tool.called.v1")
    assert [(c.payload["tool"], c.payload["channel"], c.payload["ok"]) for c in called] == [
        ("log.note", "bridge", True)
    ] * 2
    assert all(
        c.caused_by == STARTED and c.payload["call_key"].startswith("sha256:") for c in called
    )
    assert usage_from_events(events_of(store), attempt=1).bridge_calls == 2


def step_result(out: list[Any]) -> list[Any]:
    return [line[0] for line in out]


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
def test_the_same_call_in_a_retried_attempt_is_answered_without_running_it_again(
    tmp_path, store, artifacts
):
    evaluate = Counting(evaluate_handler)
    big = Counting(lambda args, call: {"blob": "y" * (INLINE_RESULT_BYTES * 3)})
    code = """
        emit(call("artifact.evaluate", {"path": "output/report.md"}))
        emit(call("artifact.evaluate", {"path": "output/report.md"}, key="second look"))
        emit(call("log.note", {"text": "big"}))
    """
    handlers = {"artifact.evaluate": evaluate, "log.note": big}
    _, first = run_step(tmp_path, store, artifacts, code, handlers=handlers)
    assert len(evaluate.calls) == 2  # a distinct client key is a distinct call
    _, second = run_step(
        tmp_path, store, artifacts, code, handlers=handlers, bridge_policy=policy(attempt=2)
    )
    assert second == first
    assert len(evaluate.calls) == 2 and len(big.calls) == 1
    called = events_of(store, "tool.called.v1")
    assert len(called) == 3 and {c.payload["attempt"] for c in called} == {1}
    assert "result_ref" in called[2].payload["detail"]  # too large for the event: an artifact
    assert len(events_of(store, "tool.replayed.v1")) == 3
    replay = events_of(store, "tool.replayed.v1")[0]
    assert replay.payload["original_event_id"] == called[0].event_id


@needs_bwrap
def test_an_evaluator_proof_is_persisted_with_the_call(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        'emit(call("artifact.evaluate", {"path": "output/report.md"}))',
    )
    [[(status, proof)]] = out
    assert status == "ok" and proof["model_call_id"] == "model-call-7"
    [called] = events_of(store, "tool.called.v1")
    recorded = called.payload["detail"]["result"]
    assert recorded["bundle_sha256"] == PROOF["bundle_sha256"] and recorded["verdict"] == "pass"
    assert [c["result"] for c in recorded["criteria"]] == ["pass", "pass"]
    [persisted] = events_of(store, "evaluation.proof.v1")
    assert persisted.payload == PROOF and persisted.caused_by == STARTED


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


@needs_bwrap
def test_malformed_lines_get_an_error_reply_and_the_bridge_keeps_serving(
    tmp_path, store, artifacts
):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        import os, socket
        path = os.environ["FORGE_BRIDGE_SOCKET"]
        s = socket.socket(socket.AF_UNIX)
        s.connect(path)
        f = s.makefile("rb")
        for line in [b"{not json\\n", b"[1, 2]\\n", b'{"id": 3, "tool": 7}\\n', b"NaN\\n",
                     b'{"id": 5, "tool": "log.note", "args": {"n": 1152921504606846976}}\\n',
                     b'{"id": 4, "tool": "log.note", "args": {"text": "fine"}}\\n']:
            s.sendall(line)
            emit(json.loads(f.readline()))
        try:
            s.sendall(b"x" * (2 << 20))
        except BrokenPipeError:
            pass  # the bridge stops reading at 1 MiB; its reply is already queued
        emit(json.loads(f.readline()))
        try:  # the bridge closed that connection: EOF, or a reset when bytes were left unread
            emit(f.readline() == b"")
        except ConnectionResetError:
            emit(True)
        s.close()
        emit(call("log.note", {"text": "a new connection works"}))
        """,
    )
    replies = [line[0] for line in out]
    for reply in replies[:5]:
        assert reply["ok"] is False and reply["error"]["class"] == "BAD_REQUEST", reply
    assert "not JSON" in replies[0]["error"]["message"]
    assert replies[4]["id"] == 5 and "integers beyond 2**53" in replies[4]["error"]["message"]
    assert replies[5] == {"id": 4, "ok": True, "result": replies[5]["result"]}
    assert (
        replies[6]["error"]["class"] == "BAD_REQUEST"
        and "longer than" in (replies[6]["error"]["message"])
    )
    assert replies[7] is True and replies[8][0] == "ok"
    refused = events_of(store, "tool.refused.v1")
    assert [r.payload["failure_class"] for r in refused] == ["BAD_REQUEST"] * 6
    assert len(events_of(store, "tool.called.v1")) == 2


@needs_bwrap
def test_concurrent_calls_share_one_connection_and_never_overspend(tmp_path, store, artifacts):
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        import threading
        results = []
        def work(n):
            results.append(call("log.note", {"text": f"thread {n}"}))
        threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
        for t in threads: t.start()
        for t in threads: t.join()
        emit(sorted(r[0] if r[0] == "ok" else r[1] for r in results))
        """,
        bridge_policy=policy(bridge_call_budget=3),
    )
    assert out == [[["BUDGET_EXHAUSTED"] * 5 + ["ok"] * 3]]
    assert len(events_of(store, "tool.called.v1")) == 3


@needs_bwrap
def test_a_crashing_handler_is_a_recorded_failed_call(tmp_path, store, artifacts):
    def broken(args: dict[str, Any], call: BridgeCall) -> Any:
        if args.get("fail") == "tool":
            raise ToolError("EVALUATOR_UNAVAILABLE", "no evaluator model is bound")
        raise KeyError("rubric")

    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("artifact.evaluate", {"fail": "tool"}))
        emit(call("artifact.evaluate", {"fail": "bug"}))
        emit(call("log.note", {"text": "still here"}))
        """,
        handlers={"artifact.evaluate": broken},
    )
    tool_error, crash, note = step_result(out)
    assert tool_error == ["err", "EVALUATOR_UNAVAILABLE", "no evaluator model is bound"]
    assert crash[:2] == ["err", "TOOL_CRASHED"] and "KeyError" in crash[2]
    assert note[0] == "ok"
    called = events_of(store, "tool.called.v1")
    assert [c.payload["ok"] for c in called] == [False, False, True]
    assert called[0].payload["detail"]["error"]["class"] == "EVALUATOR_UNAVAILABLE"
    assert usage_from_events(events_of(store)).bridge_calls == 3  # failed calls are charged


def test_isolation_none_reaches_the_bridge_from_a_long_workspace_path(tmp_path, store, artifacts):
    deep = tmp_path / ("d" * 60) / ("e" * 60) / "ws"
    assert len(str(deep / "meta" / "bridge.sock")) > 108
    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        'emit(call("log.note", {"text": "no sandbox"}), forge_bridge.__file__)',
        isolation="none",
        workspace=deep,
    )
    [[result, client_file]] = out
    assert result[0] == "ok" and client_file == f"{RUNTIME_DIR}/bridge/forge_bridge.py"


def test_the_socket_belongs_to_the_sandbox_user_alone(tmp_path, store, artifacts):
    ws = tmp_path / "ws"
    ensure_layout(ws)
    (ws / "meta" / "bridge.sock").write_text("planted")
    pol = policy()
    ledger = BridgeLedger(
        store, artifacts, policy=pol, caused_by=STARTED, run_budget_refusal=lambda: None
    )
    with pytest.raises(FileExistsError, match="not a socket"):
        BridgeServer(ws / "meta" / "bridge.sock", policy=pol, handlers={}, ledger=ledger).start()
    (ws / "meta" / "bridge.sock").unlink()
    with BridgeServer(ws / "meta" / "bridge.sock", policy=pol, handlers={}, ledger=ledger):
        st = os.lstat(ws / "meta" / "bridge.sock")
        assert stat.S_ISSOCK(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600
        identity = sandbox_identity()
        assert (st.st_uid, st.st_gid) == (identity or (os.getuid(), os.getgid()))
    assert not (ws / "meta" / "bridge.sock").exists()
    with pytest.raises(ValueError, match="same BridgePolicy"):
        BridgeServer(ws / "x.sock", policy=policy(attempt=2), handlers={}, ledger=ledger)


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


@needs_bwrap
def test_a_platform_fault_is_reported_to_the_step_and_the_bridge_keeps_serving(
    tmp_path, store, artifacts
):
    faults = iter([RuntimeError("the budget projection is unreachable")])

    def flaky() -> str | None:
        fault = next(faults, None)
        if fault is not None:
            raise fault
        return None

    _, out = run_step(
        tmp_path,
        store,
        artifacts,
        """
        emit(call("log.note", {"text": "first"}))
        emit(call("log.note", {"text": "second"}))
        """,
        run_budget_refusal=flaky,
    )
    fault, fine = step_result(out)
    assert fault[:2] == ["err", "BRIDGE_FAULT"] and "retry the call" in fault[2]
    assert fine[0] == "ok"
    assert [c.payload["ok"] for c in events_of(store, "tool.called.v1")] == [True]
