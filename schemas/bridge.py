"""The governed tool bridge (DESIGN §5): one step's call policy and the events its calls leave."""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel
from schemas.profile import EgressPolicy
from schemas.scope import Scope, Scoped

# tool.called.v1 (schemas.budget.ToolCalled, channel "bridge") records every dispatched call;
# these record what the bridge answered without dispatching. None of them is usage.
TOOL_REFUSED = "tool.refused.v1"
TOOL_REPLAYED = "tool.replayed.v1"
LOG_NOTED = "log.noted.v1"

LogLevel = Literal["debug", "info", "warning", "error"]


class BridgePolicy(Scoped):
    """What one step attempt may do through the bridge, fixed before its code starts."""

    run_id: str = Field(min_length=1)
    step_key: str = Field(min_length=1)
    attempt: int = Field(ge=1)
    iteration: int = Field(default=1, ge=1)
    contract_hash: str = Field(min_length=1)
    allowed_tool_ids: list[str] = Field(default_factory=list)
    bridge_call_budget: int = Field(ge=0, description="dispatched calls over every attempt")
    egress: EgressPolicy = EgressPolicy()
    scope: Scope


class EgressDecision(FrozenModel):
    """Whether one HTTP request may leave, by which rule, and why (compiler.egress)."""

    allowed: bool
    rule_index: int | None = Field(default=None, ge=0)
    reason: str
    target: str | None = Field(
        default=None, description="allowed only: the URL to request, rebuilt from the checked parts"
    )


class ToolRefusal(FrozenModel):
    """Payload of tool.refused.v1: a call the bridge answered with a refusal, never dispatched."""

    step_key: str
    attempt: int = Field(ge=1)
    iteration: int = Field(default=1, ge=1)
    tool: str
    failure_class: str
    reason: str
    call_index: int = Field(ge=0)
    call_key: str | None = None


class ToolReplayed(FrozenModel):
    """Payload of tool.replayed.v1: a call answered from an earlier call with the same key."""

    step_key: str
    attempt: int = Field(ge=1)
    iteration: int = Field(default=1, ge=1)
    tool: str
    call_index: int = Field(ge=0)
    call_key: str
    original_event_id: str


class LogNoted(FrozenModel):
    """Payload of log.noted.v1: a note step code left through `log.note`."""

    step_key: str
    attempt: int = Field(ge=1)
    iteration: int = Field(default=1, ge=1)
    level: LogLevel = "info"
    text: str
    truncated: bool = False
    call_index: int = Field(ge=0)
