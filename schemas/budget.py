"""Budgets: recorded usage, per-run limits, projections and extensions (seed 000 §10.2)."""

from datetime import datetime
from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel, PlainData
from schemas.events import Actor

# The events the usage ledger is made of. The model layer appends one model.called.v1 per provider
# call and one tool.called.v1 per tool dispatch, in the step's stream, with the step and attempt.
MODEL_CALLED = "model.called.v1"
TOOL_CALLED = "tool.called.v1"
ToolChannel = Literal["executor", "bridge"]


class Usage(FrozenModel):
    """Recorded spend: what the provider reported, never what Forge guessed."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_creation_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(default=0.0, ge=0, allow_inf_nan=False)
    model_calls: int = Field(default=0, ge=0)
    tool_calls: int = Field(default=0, ge=0, description="executor tool-loop dispatches")
    bridge_calls: int = Field(default=0, ge=0, description="governed tool-bridge calls")

    @property
    def tokens(self) -> int:
        """Every billed token: input, output and both kinds of cache tokens."""
        return (
            self.input_tokens
            + self.output_tokens
            + self.cache_read_tokens
            + self.cache_creation_tokens
        )

    def plus(self, other: "Usage") -> "Usage":
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_creation_tokens=self.cache_creation_tokens + other.cache_creation_tokens,
            cost_usd=round(self.cost_usd + other.cost_usd, 9),
            model_calls=self.model_calls + other.model_calls,
            tool_calls=self.tool_calls + other.tool_calls,
            bridge_calls=self.bridge_calls + other.bridge_calls,
        )

    def since(self, earlier: "Usage") -> "Usage":
        """What was recorded after `earlier` (a step's cumulative usage at a previous pass)."""
        return Usage(
            input_tokens=max(0, self.input_tokens - earlier.input_tokens),
            output_tokens=max(0, self.output_tokens - earlier.output_tokens),
            cache_read_tokens=max(0, self.cache_read_tokens - earlier.cache_read_tokens),
            cache_creation_tokens=max(
                0, self.cache_creation_tokens - earlier.cache_creation_tokens
            ),
            cost_usd=max(0.0, round(self.cost_usd - earlier.cost_usd, 9)),
            model_calls=max(0, self.model_calls - earlier.model_calls),
            tool_calls=max(0, self.tool_calls - earlier.tool_calls),
            bridge_calls=max(0, self.bridge_calls - earlier.bridge_calls),
        )


class ModelCalled(FrozenModel):
    """Payload of model.called.v1: one provider call as the provider reported it."""

    step_key: str | None = None
    attempt: int = Field(default=1, ge=1)
    model: str = Field(description="the binding ref, as profiles and prices name models")
    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_creation_tokens: int = Field(default=0, ge=0)
    cost_usd: float = Field(ge=0, allow_inf_nan=False)
    latency_ms: int = Field(default=0, ge=0)
    prompt_hash: str | None = None
    provider: str | None = Field(default=None, description="who answered: anthropic, scripted")
    provider_model: str | None = Field(
        default=None, description="the model name the provider reported (audit only)"
    )
    # The model layer's detail (all optional, so earlier events still validate).
    iteration: int = Field(default=1, ge=1)
    consumer: str | None = None
    call_key: str | None = Field(default=None, description="idempotency key within the stream")
    stop_reason: str | None = None
    response_ref: dict[str, PlainData] | None = Field(
        default=None, description="ArtifactRef of the stored response, for replay"
    )
    cost_known: bool = Field(default=True, description="False: the model has no price")
    # The compiled context the prompt came from (seed 002: replay and audit of what was seen).
    context_hash: str | None = None
    stage_hashes: dict[str, str] | None = Field(
        default=None, description="context stage -> sha256 of its output"
    )


class ToolCalled(FrozenModel):
    """Payload of tool.called.v1: one tool dispatch, outer loop or bridge."""

    step_key: str | None = None
    attempt: int = Field(default=1, ge=1)
    tool: str
    channel: ToolChannel
    iteration: int = Field(default=1, ge=1)
    call_key: str | None = Field(default=None, description="idempotency key")
    ok: bool = True
    detail: dict[str, PlainData] = Field(default_factory=dict)


class ModelPrice(FrozenModel):
    """USD per million tokens for one model (stdlib/models/prices.yaml)."""

    input_per_mtok: float = Field(ge=0)
    output_per_mtok: float = Field(ge=0)
    cache_read_per_mtok: float = Field(default=0.0, ge=0)
    cache_write_per_mtok: float = Field(default=0.0, ge=0)


class PriceTable(FrozenModel):
    models: dict[str, ModelPrice] = Field(default_factory=dict)


class StepProjection(FrozenModel):
    """What a step may spend at most on its own model calls, computed at compile time."""

    tokens: int = Field(default=0, ge=0)
    cost_usd: float | None = Field(default=0.0, ge=0, description="None: no price known")
    basis: str = "no model calls"


class BudgetLimits(FrozenModel):
    """Per-run caps; None means no cap of that kind."""

    max_tokens: int | None = Field(default=None, gt=0)
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    def capped(self, tokens: int | None) -> "BudgetLimits":
        """These caps with max_tokens at most `tokens` (None: unchanged); the cost cap stays."""
        if tokens is None:
            return self
        held = tokens if self.max_tokens is None else min(self.max_tokens, tokens)
        return self.model_copy(update={"max_tokens": held})


class ExtendBudgetInput(FrozenModel):
    """Add to a run's caps (update `extend_budget`, or the signal of the same name).

    Amounts are checked by the update's validator (not by the schema) so that a bad request is
    refused with a reason instead of failing to decode.
    """

    tokens: int = 0
    cost_usd: float = 0.0
    actor: Actor
    reason: str = ""


class BudgetExtension(FrozenModel):
    tokens: int
    cost_usd: float
    actor: Actor
    reason: str
    extended_at: datetime


BudgetStatus = Literal["ok", "exhausted"]


class BudgetState(FrozenModel):
    """The run's budget as the workflow enforces it; visible in the `status` query."""

    limits: BudgetLimits = BudgetLimits()
    spent: Usage = Usage()
    status: BudgetStatus = "ok"
    blocked_reason: str | None = None
    blocked_steps: list[str] = Field(default_factory=list)
    exhaustions: int = Field(default=0, ge=0)
    extensions: list[BudgetExtension] = Field(default_factory=list)
