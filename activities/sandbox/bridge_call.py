"""What a bridge tool handler receives and may raise, and the idempotency key of a call."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from activities.sandbox.bridge_ledger import BridgeLedger
from compiler.hashing import sha256_of
from schemas.base import FrozenModel
from schemas.bridge import BridgePolicy
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.events import EventDraft

__all__ = ["BridgeCall", "ToolError", "ToolHandler", "ToolRefused", "call_key"]


class _ToolFailure(ForgeError):
    """A handler's failure as step code sees it: `CODE: message`, as before the catalogue."""

    message_is_complete = True  # returned to step code as the call's failure
    __str__ = ForgeError.line

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code


class ToolRefused(_ToolFailure):
    """Raised by a handler to refuse a call before any side effect: recorded, not charged."""

    def __init__(self, failure_class: ErrorCode, reason: str) -> None:
        super().__init__(failure_class, reason)
        self.reason = reason


class ToolError(_ToolFailure):
    """Raised by a handler when the dispatched call failed: recorded as ok=false and charged."""


@dataclass(frozen=True)
class BridgeCall:
    """What a handler knows about the call it serves."""

    policy: BridgePolicy
    tool: str
    key: str  # the idempotency key
    client_key: str | None
    index: int
    _ledger: BridgeLedger = field(repr=False)
    _emitted: list[EventDraft] = field(default_factory=list, repr=False)

    def emit(self, type_: str, payload: FrozenModel) -> str:
        """Record an event of this call (e.g. log.noted.v1) with its tool.called.v1; its id."""
        draft = self._ledger.draft(type_, self.index, payload, part=f".e{len(self._emitted)}")
        self._emitted.append(draft)
        return draft.event_id


ToolHandler = Callable[[dict[str, Any], BridgeCall], Any]


def call_key(policy: BridgePolicy, tool: str, args: dict[str, Any], client_key: str | None) -> str:
    """The idempotency key: sha256 of the RFC 8785 JSON of contract, tool, args, key, iteration."""
    return sha256_of(
        {
            "contract_hash": policy.contract_hash,
            "tool": tool,
            "args": args,
            "key": client_key,
            "iteration": policy.iteration,
        }
    )
