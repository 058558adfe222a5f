"""Tool-bridge round trip per call against a bare Unix-socket JSON-lines echo, in the same run.

One client process (this one) and the real `forge_bridge.Client`, on the host (no sandbox, so
only the bridge's own cost is measured), call three servers in this process over Unix sockets:

* echo: a bare threaded server that reads a JSON line, decodes it, and writes back
  `{"id", "ok": true, "result": args}`: the floor any JSON-lines socket protocol pays;
* bridge dispatch: `BridgeServer` with every call-time check (known tool, allowed_tool_ids,
  idempotency key and lookup, per-step budget reservation, run budget callable), a handler that
  returns its args, and the ledger building the tool.called.v1 event exactly as it would be
  stored, but with the event-store append left out (`_persist` returns the drafts);
* bridge persisted: the same with the real ledger on a real SQLite event store (WAL,
  synchronous=NORMAL, so a commit costs no fsync; each call is one append transaction).

The goal (≤ 2× the echo) applies to **bridge dispatch**: the persisted figure is dominated by
the SQLite transaction, a store cost the bridge does not control and that a PostgreSQL store
prices differently; it is reported alongside with its own ratio. Each call uses a fresh client
key, so every call is dispatched (none is answered from the idempotency cache); args are a
log.note-sized `{"text": ...}`. Latency is per call (perf_counter around `Client.call`); the
configurations are timed in interleaved rounds so drift on a shared machine hits all three.

Run on its own with `python -m tests.bench.bench_bridge`.
"""

import json
import socket
import statistics
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from activities.sandbox.bridge import BridgeCall, BridgeLedger, BridgeServer
from activities.sandbox.client.forge_bridge import Client
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import EventStore, open_event_store
from compiler.hashing import sha256_text
from schemas.bridge import BridgePolicy
from schemas.events import EventDraft
from schemas.scope import Scope
from tests.bench.report import run_alone

ROUNDS = 5
CALLS_PER_ROUND = 400
WARMUP = 200
GOAL_RATIO = 2.0
RUN, STEP = "bench-run", "bench-step"
STARTED = f"{RUN}:step.started.v1:{STEP}:1"
TOOL = "bench.echo"


class _UnpersistedLedger(BridgeLedger):
    """The real ledger with the event-store append left out (see the module docstring)."""

    def _persist(self, drafts: list[EventDraft]) -> Sequence[EventDraft]:
        return drafts


def _echo(args: dict[str, Any], call: BridgeCall) -> Any:
    return args


@contextmanager
def _echo_server(path: Path) -> Iterator[None]:
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(4)
    threads: list[threading.Thread] = []

    def serve(conn: socket.socket) -> None:
        buffer = bytearray()
        with conn:
            while chunk := conn.recv(1 << 16):
                buffer += chunk
                while (newline := buffer.find(b"\n")) >= 0:
                    request = json.loads(bytes(buffer[:newline]))
                    del buffer[: newline + 1]
                    reply = {"id": request["id"], "ok": True, "result": request["args"]}
                    conn.sendall(json.dumps(reply).encode() + b"\n")

    def accept() -> None:
        while True:
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            threads.append(thread)
            thread.start()

    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    try:
        yield
    finally:
        listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        acceptor.join()
        for thread in threads:
            thread.join(timeout=5)


def _store(root: Path) -> EventStore:
    events = open_event_store(f"sqlite:///{root / 'forge.db'}")
    now = datetime.now(UTC)
    root_event = EventDraft(
        event_id=f"{RUN}:run.started.v1", type="run.started.v1", run_id=RUN, timestamp=now
    )
    events.append([root_event], stream_id=f"{RUN}:run")
    started = EventDraft(
        event_id=STARTED,
        type="step.started.v1",
        run_id=RUN,
        caused_by=root_event.event_id,
        timestamp=now,
        payload={"step_key": STEP},
    )
    events.append([started], stream_id=f"{RUN}:step:{STEP}")
    return events


def _timer(client: Client, tag: str) -> Callable[[int], float]:
    def one(i: int) -> float:
        args = {"text": f"row {i}: totals reconciled against the ledger"}
        start = time.perf_counter()
        client.call(TOOL, args, key=f"{tag}-{i}")
        return (time.perf_counter() - start) * 1e6

    return one


def _measure(root: Path) -> dict[str, list[float]]:
    events = _store(root)
    artifacts = LocalArtifactStore(root / "artifacts")
    policy = BridgePolicy(
        run_id=RUN,
        step_key=STEP,
        attempt=1,
        contract_hash=sha256_text("bench contract"),
        allowed_tool_ids=[TOOL],
        bridge_call_budget=10**9,
        scope=Scope.default(),
    )

    def ledger(kind: type[BridgeLedger]) -> BridgeLedger:
        return kind(
            events, artifacts, policy=policy, caused_by=STARTED, run_budget_refusal=lambda: None
        )

    samples: dict[str, list[float]] = {"echo": [], "dispatch": [], "persisted": []}
    (root / "d").mkdir()
    (root / "p").mkdir()
    servers = (
        _echo_server(root / "echo.sock"),
        BridgeServer(
            root / "d" / "bridge.sock",
            policy=policy,
            handlers={TOOL: _echo},
            ledger=ledger(_UnpersistedLedger),
        ),
        BridgeServer(
            root / "p" / "bridge.sock",
            policy=policy,
            handlers={TOOL: _echo},
            ledger=ledger(BridgeLedger),
        ),
    )
    clients = {
        "echo": Client(root / "echo.sock"),
        "dispatch": Client(root / "d" / "bridge.sock"),
        "persisted": Client(root / "p" / "bridge.sock"),
    }
    with servers[0], servers[1], servers[2]:
        timers = {name: _timer(client, name) for name, client in clients.items()}
        for timer in timers.values():
            for i in range(WARMUP):
                timer(-1 - i)
        n = 0
        for _ in range(ROUNDS):
            for name, timer in timers.items():
                samples[name] += [timer(n + i) for i in range(CALLS_PER_ROUND)]
            n += CALLS_PER_ROUND
        for client in clients.values():
            client.close()
    events.close()
    return samples


def _p99(values: list[float]) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[98]


def run() -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="forge-bench-bridge-") as tmp:
        samples = _measure(Path(tmp))
    echo = statistics.median(samples["echo"])
    dispatch = statistics.median(samples["dispatch"])
    persisted = statistics.median(samples["persisted"])
    ratio = dispatch / echo
    calls = ROUNDS * CALLS_PER_ROUND
    return [
        {
            "name": "bridge.round_trip",
            "calls": calls,
            "echo_p50_us": round(echo, 1),
            "echo_p99_us": round(_p99(samples["echo"]), 1),
            "dispatch_p50_us": round(dispatch, 1),
            "dispatch_p99_us": round(_p99(samples["dispatch"]), 1),
            "persisted_p50_us": round(persisted, 1),
            "persisted_p99_us": round(_p99(samples["persisted"]), 1),
            "ratio_dispatch_to_echo": round(ratio, 3),
            "ratio_persisted_to_echo": round(persisted / echo, 3),
            "goal_ratio": GOAL_RATIO,
            "meets_goal": ratio <= GOAL_RATIO,
            "figure": f"dispatch p50 {dispatch:.0f} µs/call (all checks, event built, store "
            f"append left out); persisted to SQLite p50 {persisted:.0f} µs/call",
            "versus": f"dispatch {ratio:.2f}×, persisted {persisted / echo:.2f}× a bare "
            f"Unix-socket JSON-lines echo ({echo:.0f} µs/call), {calls} calls each",
            "goal": f"dispatch ≤ {GOAL_RATIO:g}× the echo (persisted reported, not held to it)",
        }
    ]


def main() -> int:
    return run_alone(run())


if __name__ == "__main__":
    raise SystemExit(main())
