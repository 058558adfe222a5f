"""The tool bridge's ledger: one step's bridge calls as events, results kept for idempotent replay.

Everything the bridge answers lands in the step's stream (`{run_id}:step:{step_key}`), caused by
the step's started event: tool.called.v1 for a dispatched call (the usage compiler/budget.py
counts), tool.refused.v1 and tool.replayed.v1 for calls answered without dispatching. A result
small enough rides in the event; a larger one is stored in the artifact store and referenced, so
a retried attempt gets exactly the bytes the first one did.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from activities import masked_output
from activities.masked_output import clipped
from activities.sandbox.client.forge_bridge import MAX_RESPONSE_BYTES
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from compiler.hashing import canonical_json
from compiler.ladder.secrets.mask import mask_value
from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.bridge import TOOL_REFUSED, TOOL_REPLAYED, BridgePolicy, ToolRefusal, ToolReplayed
from schemas.budget import TOOL_CALLED, ToolCalled
from schemas.event_catalogue import payload_of
from schemas.event_ids import event_id, stream_id
from schemas.events import EventDraft

__all__ = ["INLINE_RESULT_BYTES", "BridgeLedger", "StoredCall"]

INLINE_RESULT_BYTES = 4096  # canonical JSON bytes of a result kept inside its event
SUMMARY_CHARS = 1024
_SUMMARY_ENCODER = json.JSONEncoder(ensure_ascii=False, default=repr, separators=(",", ":"))
_SECRET_KEYS = ("authorization", "cookie", "token", "secret", "password", "api_key", "apikey")


@dataclass(frozen=True)
class StoredCall:
    """A completed call found by its idempotency key: its event and the result it returned."""

    event_id: str
    attempt: int
    result: Any


@dataclass(frozen=True)
class _Completed:
    event_id: str
    attempt: int
    detail: dict[str, Any]


class BridgeLedger:
    """One step's bridge calls over every attempt, read from and written to the real stores.

    Built once per attempt, before the bridge serves: it reads the step's stream once, at the
    first call (most steps make none), and then keeps its index current with its own writes
    (one attempt of a step runs at a time).
    `run_budget_refusal` is called before every dispatch and returns why the run's token or cost
    budget is exhausted, or None. `before_first_use` runs before the ledger first reads the
    stream (the attempt's own start may still be in flight: it lands first).
    """

    def __init__(
        self,
        events: EventStore,
        artifacts: ArtifactStore,
        *,
        policy: BridgePolicy,
        caused_by: str,
        run_budget_refusal: Callable[[], str | None],
        before_first_use: Callable[[], None] | None = None,
    ) -> None:
        self.policy = policy
        self._before_first_use = before_first_use
        self.stream_id = stream_id(policy.run_id, "step", policy.step_key)
        self._events = events
        self._artifacts = artifacts
        self._caused_by = caused_by
        self._run_budget_refusal = run_budget_refusal
        self._lock = threading.Lock()
        self._dispatched = 0
        self._completed: dict[str, _Completed] = {}
        self._next_index = 0
        self._loaded = False

    def _load(self) -> None:
        """Index the step's stream, once; the caller holds the lock."""
        if not self._loaded:
            if self._before_first_use is not None:
                self._before_first_use()
            self._loaded = True
            for event in self._events.read_stream(
                self.stream_id, tenant_id=self.policy.scope.tenant
            ):
                self._index(event.event_id, event.type, event.payload)

    # ---- reading ---------------------------------------------------------------------------

    def dispatched_calls(self) -> int:
        """Bridge calls this step has dispatched in this iteration, over every attempt.

        A loop step's iterations are separate passes, each with the contract's whole budget.
        """
        with self._lock:
            self._load()
            return self._dispatched

    def run_budget_refusal(self) -> str | None:
        """Why the run's token/cost budget refuses another call, or None."""
        return self._run_budget_refusal()

    def next_index(self) -> int:
        """A fresh call index within this attempt (event ids are built from it)."""
        with self._lock:
            self._load()
            index = self._next_index
            self._next_index += 1
            return index

    def find(self, key: str) -> StoredCall | None:
        """The completed (ok) call with this idempotency key, with its full result, if any."""
        with self._lock:
            self._load()
            found = self._completed.get(key)
        if found is None:
            return None
        detail = found.detail
        if "result_ref" in detail:
            ref = ArtifactRef.model_validate(detail["result_ref"])
            result = json.loads(
                self._artifacts.read_bytes(self.policy.scope, ref.sha256, MAX_RESPONSE_BYTES)
            )
        else:
            result = detail.get("result")
        return StoredCall(event_id=found.event_id, attempt=found.attempt, result=result)

    # ---- writing ---------------------------------------------------------------------------

    def draft(
        self, type_: str, call_index: int, payload: FrozenModel, *, part: str = ""
    ) -> EventDraft:
        """An event of this attempt's call `call_index`, with its deterministic id."""
        policy = self.policy
        return EventDraft(
            event_id=event_id(
                policy.run_id,
                type_,
                policy.step_key,
                f"i{policy.iteration}.a{policy.attempt}.c{call_index}{part}",
            ),
            type=type_,
            scope=policy.scope,
            run_id=policy.run_id,
            caused_by=self._caused_by,
            timestamp=datetime.now(UTC),
            payload=payload_of(type_, payload),
        )

    def record_call(
        self,
        *,
        call_index: int,
        tool: str,
        call_key: str,
        client_key: str | None,
        args: dict[str, Any],
        ok: bool,
        result: Any = None,
        error: tuple[str, str] | None = None,
        duration_ms: int = 0,
        emitted: Sequence[EventDraft] = (),
        size_hint: int | None = None,
    ) -> str:
        """Append tool.called.v1 (after the events the handler emitted), in one transaction.

        `result` must be JSON; one over INLINE_RESULT_BYTES is stored as an artifact.
        `size_hint` is an upper bound of the result's JSON size when the caller has one (the
        encoded reply), which spares encoding a small result once more.
        """
        detail: dict[str, Any] = {
            "call_index": call_index,
            "client_key": client_key,
            "args": summary(args),
            "duration_ms": duration_ms,
        }
        if ok:
            small = size_hint is not None and size_hint <= INLINE_RESULT_BYTES
            body = b"" if small else _json_bytes(result)
            if small or len(body) <= INLINE_RESULT_BYTES:
                detail["result"] = result
            else:
                ref = self._artifacts.put_bytes(
                    self.policy.scope,
                    body,
                    logical_path=f"bridge/{self.policy.step_key}/{tool}.json",
                    media_type="application/json",
                )
                detail["result_ref"] = ref.model_dump(mode="json")
                detail["result_summary"] = summary(result)
        elif error is not None:
            detail["error"] = {
                "class": error[0],
                "message": clipped(error[1], SUMMARY_CHARS, "event"),
            }
        policy = self.policy
        payload = ToolCalled(
            step_key=policy.step_key,
            attempt=policy.attempt,
            iteration=policy.iteration,
            tool=tool,
            channel="bridge",
            call_key=call_key,
            ok=ok,
            detail=detail,
        )
        return self._append([*emitted, self.draft(TOOL_CALLED, call_index, payload)])

    def record_refusal(
        self,
        *,
        call_index: int,
        tool: str,
        failure_class: str,
        reason: str,
        call_key: str | None = None,
    ) -> str:
        """Append tool.refused.v1: answered, never dispatched, not usage."""
        policy = self.policy
        payload = ToolRefusal(
            step_key=policy.step_key,
            attempt=policy.attempt,
            iteration=policy.iteration,
            tool=clipped(tool, 200, "event"),
            failure_class=failure_class,
            reason=clipped(reason, SUMMARY_CHARS, "event"),
            call_index=call_index,
            call_key=call_key,
        )
        return self._append([self.draft(TOOL_REFUSED, call_index, payload)])

    def record_replay(
        self, *, call_index: int, tool: str, stored: StoredCall, call_key: str
    ) -> str:
        """Append tool.replayed.v1: answered from `stored`, not dispatched again, not usage."""
        policy = self.policy
        payload = ToolReplayed(
            step_key=policy.step_key,
            attempt=policy.attempt,
            iteration=policy.iteration,
            tool=tool,
            call_index=call_index,
            call_key=call_key,
            original_event_id=stored.event_id,
        )
        return self._append([self.draft(TOOL_REPLAYED, call_index, payload)])

    def _append(self, drafts: list[EventDraft]) -> str:
        with self._lock:
            self._load()
            last = self._persist(drafts)[-1]
            # The record's own event is last; what a handler emitted carries the same index.
            self._index(last.event_id, last.type, last.payload)
        return last.event_id

    def _persist(self, drafts: list[EventDraft]) -> Sequence[EventDraft]:
        """Write the drafts to the event store (one transaction) and return them as stored."""
        return self._events.append(drafts, stream_id=self.stream_id)

    def _index(self, event_id: str, type_: str, payload: dict[str, Any]) -> None:
        same_iteration = payload.get("iteration", 1) == self.policy.iteration
        if type_ == TOOL_CALLED and payload.get("channel") == "bridge":
            self._dispatched += int(same_iteration)
            detail = payload.get("detail") or {}
            key = payload.get("call_key")
            if payload.get("ok") and key and ("result" in detail or "result_ref" in detail):
                attempt = int(payload.get("attempt", 1))
                self._completed.setdefault(key, _Completed(event_id, attempt, detail))
            index = detail.get("call_index")
        elif type_ in (TOOL_REFUSED, TOOL_REPLAYED) or "call_index" in payload:
            index = payload.get("call_index")
        else:
            return
        if (
            same_iteration
            and payload.get("attempt") == self.policy.attempt
            and isinstance(index, int)
        ):
            # A bridge restarted within one attempt continues its numbering: ids never collide.
            self._next_index = max(self._next_index, index + 1)


def _json_bytes(value: Any) -> bytes:
    try:
        return canonical_json(value)
    except ValueError:
        # Integers beyond 2**53 have no RFC 8785 form; sorted compact JSON still round-trips.
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def summary(value: Any) -> str:
    """A bounded, redacted one-line JSON rendering of `value` for an event."""
    # Masked as a value, before it is encoded: in JSON text a line break is the two characters
    # `\n`, which hides a key's or a token's lines from the detectors that know them by body.
    masked, found = mask_value(_redacted(value))
    masked_output.note("event", None, found)
    text = _SUMMARY_ENCODER.encode(masked)
    if len(text) > SUMMARY_CHARS:
        return clipped(text, SUMMARY_CHARS - 1, "event") + "…"
    return text


def _redacted(value: Any, depth: int = 0) -> Any:
    if depth > 20:
        return "…"
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for k, v in value.items():
            name = str(k).lower().replace("-", "_")
            if name == "headers" and isinstance(v, dict):
                out[str(k)] = {str(h): "<redacted>" for h in v}  # names are useful, values never
            elif any(s in name for s in _SECRET_KEYS):
                out[str(k)] = "<redacted>"
            elif name == "url" and isinstance(v, str) and "?" in v:
                out[str(k)] = v.split("?", 1)[0] + "?<query omitted>"
            else:
                out[str(k)] = _redacted(v, depth + 1)
        return out
    if isinstance(value, list):
        return [_redacted(v, depth + 1) for v in value[:50]]
    if isinstance(value, str) and len(value) > SUMMARY_CHARS:
        return clipped(value, SUMMARY_CHARS, "event") + "…"
    return value
