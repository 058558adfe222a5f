"""Serving the bridge: the wire protocol, concurrency, the socket, isolation none, faults."""

import json
import os
import socket
import stat
import threading
from pathlib import Path

import pytest

from activities.sandbox.bridge import BridgeLedger, BridgeServer
from activities.sandbox.bwrap import sandbox_identity
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.sandbox.workspace import ensure_layout
from tests.sandbox.bridge.support import STARTED, events_of, policy, run_step, step_result
from tests.support.sandbox import needs_bwrap


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


def test_bridges_open_at_once_each_serve_their_own_socket_until_closed(tmp_path, store, artifacts):
    """One acceptor thread serves every open bridge; a closed bridge takes no connection."""

    def serve(attempt: int) -> tuple[BridgeServer, Path]:
        ws = tmp_path / f"ws{attempt}"
        ensure_layout(ws)
        pol = policy(attempt=attempt)
        ledger = BridgeLedger(
            store, artifacts, policy=pol, caused_by=STARTED, run_budget_refusal=lambda: None
        )
        path = ws / "meta" / "bridge.sock"
        return BridgeServer(path, policy=pol, handlers={}, ledger=ledger), path

    def ask(path: Path) -> dict[str, object]:
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(path))
            s.sendall(b"{not json\n")
            return json.loads(s.makefile("rb").readline())

    (first, first_path), (second, second_path) = serve(1), serve(2)
    with first, second:
        for path in (first_path, second_path, first_path):
            reply = ask(path)
            assert reply["ok"] is False and reply["error"]["class"] == "BAD_REQUEST"
        accepting = [t for t in threading.enumerate() if t.name == "forge-bridge-accept"]
        assert len(accepting) == 1
        first.close()
        with pytest.raises((FileNotFoundError, ConnectionRefusedError)):
            ask(first_path)
        assert ask(second_path)["error"]["class"] == "BAD_REQUEST"  # type: ignore[index]
    refused = events_of(store, "tool.refused.v1")
    assert [r.payload["attempt"] for r in refused] == [1, 2, 1, 2]
