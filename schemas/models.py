"""The provider-neutral model call (seed 000 Part VI, DESIGN §7): request, response, usage.

Every model call in Forge (planner, resolver, skill resolver, executor, evaluator, repair) is a
ModelRequest built from a CompiledContext, sent through one provider protocol, and answered by a
ModelResponse. Only plain data crosses this boundary (seed 003 §3): no client, no callable.
"""

from typing import Annotated, Any, Literal

from pydantic import Field

from schemas.base import FrozenModel, PlainData
from schemas.budget import Usage
from schemas.scope import Scope, Scoped

# model.called.v1 is defined with the usage ledger (schemas.budget.MODEL_CALLED).
ModelFailureClass = Literal[
    "MODEL_RATE_LIMITED",  # 429: retryable
    "MODEL_OVERLOADED",  # 529: retryable
    "MODEL_SERVER_ERROR",  # 5xx: retryable
    "MODEL_TIMEOUT",  # no answer within the binding's timeout: retryable
    "MODEL_CONNECTION",  # could not reach the provider: retryable
    "MODEL_BAD_RESPONSE",  # an answer that is not a Messages response: retryable once or twice
    "MODEL_REQUEST_INVALID",  # 400/404/413/422: the request itself is wrong, never retried
    "MODEL_AUTH",  # 401/403: no or a bad key, never retried
    "MODEL_UNAVAILABLE",  # no provider configured for the binding, never retried
]
RETRYABLE_MODEL_FAILURES: frozenset[str] = frozenset(
    {
        "MODEL_RATE_LIMITED",
        "MODEL_OVERLOADED",
        "MODEL_SERVER_ERROR",
        "MODEL_TIMEOUT",
        "MODEL_CONNECTION",
        "MODEL_BAD_RESPONSE",
    }
)

Consumer = Literal["planner", "resolver", "skill_resolver", "executor", "evaluator", "repair"]


class ToolDef(FrozenModel):
    """A tool the model may call; name is the provider-safe form of the tool id."""

    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    description: str
    input_schema: dict[str, Any]


class TextBlock(FrozenModel):
    type: Literal["text"] = "text"
    text: str


class ToolUseBlock(FrozenModel):
    type: Literal["tool_use"] = "tool_use"
    id: str
    name: str
    input: dict[str, PlainData]


class ToolResultBlock(FrozenModel):
    type: Literal["tool_result"] = "tool_result"
    tool_use_id: str
    content: str
    is_error: bool = False


class ThinkingBlock(FrozenModel):
    """Extended thinking as the API returned it, with the signature that vouches for it.

    `thinking` may be empty (the API omits the text when asked to, and keeps the signature).
    In a tool loop with thinking on, the assistant turn that carried tool_use must be sent back
    starting with its thinking blocks, unchanged, or the API answers 400.
    """

    type: Literal["thinking"] = "thinking"
    thinking: str
    signature: str


class RedactedThinkingBlock(FrozenModel):
    """Thinking the API returned encrypted: `data` is opaque and goes back unchanged."""

    type: Literal["redacted_thinking"] = "redacted_thinking"
    data: str


ContentBlock = Annotated[
    TextBlock | ToolUseBlock | ToolResultBlock | ThinkingBlock | RedactedThinkingBlock,
    Field(discriminator="type"),
]
ResponseBlock = Annotated[
    TextBlock | ToolUseBlock | ThinkingBlock | RedactedThinkingBlock,
    Field(discriminator="type"),
]


class Message(FrozenModel):
    role: Literal["user", "assistant"]
    content: list[ContentBlock] = Field(min_length=1)


class ModelRequest(FrozenModel):
    """One call as the platform asks for it; providers drop parameters they do not support."""

    model: str = Field(description="binding ref, e.g. anthropic:claude-sonnet-4-6")
    consumer: Consumer
    system: str
    messages: list[Message] = Field(min_length=1)
    tools: list[ToolDef] = Field(default_factory=list)
    max_tokens: int = Field(gt=0)
    temperature: float | None = Field(default=None, ge=0, le=2)
    thinking_budget_tokens: int | None = Field(default=None, gt=0)
    timeout_s: float | None = Field(default=None, gt=0)
    # Mark the system prompt and tool list cacheable (Anthropic prompt caching) when it pays.
    cache_prefix: bool = False


class ModelUsage(FrozenModel):
    """Tokens as the provider reported them."""

    input_tokens: int = Field(default=0, ge=0)
    output_tokens: int = Field(default=0, ge=0)
    cache_read_tokens: int = Field(default=0, ge=0)
    cache_creation_tokens: int = Field(default=0, ge=0)


StopReason = Literal["end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"]


class ModelResponse(FrozenModel):
    """One answer: its content blocks in the API's order, stop reason and usage.

    Thinking blocks are kept (with their signature or data) so a tool loop can send the
    assistant turn back as it came; `text` and `tool_uses` leave them out.
    """

    model: str = Field(description="the model the provider says answered")
    content: list[ResponseBlock]
    stop_reason: StopReason
    usage: ModelUsage

    @property
    def text(self) -> str:
        return "".join(b.text for b in self.content if isinstance(b, TextBlock))

    @property
    def tool_uses(self) -> list[ToolUseBlock]:
        return [b for b in self.content if isinstance(b, ToolUseBlock)]


class CallScope(Scoped):
    """Where a call is accounted: its event stream, step and attempt, and its idempotency key.

    call_key identifies the call within the scope (e.g. "exec:turn-3"); a call whose key was
    already answered in the stream is replayed from the log, so a retried attempt never pays
    twice for the same request.
    """

    scope: Scope
    run_id: str | None = None
    stream_id: str
    step_key: str | None = None
    attempt: int = Field(default=1, ge=1)
    iteration: int = Field(default=1, ge=1)
    caused_by: str | None = None
    call_key: str = Field(min_length=1, max_length=120)


class ModelCallResult(FrozenModel):
    """What the gateway hands back: the response and the accounting it recorded."""

    response: ModelResponse
    model_call_id: str = Field(description="the event id of the model.called.v1 event")
    prompt_hash: str
    cost_usd: float | None
    latency_ms: int = Field(ge=0)
    replayed: bool = Field(default=False, description="answered from the log, not the provider")
    # The provider's answer before masking, kept only when masking changed it. Never serialized
    # or recorded: the Code-Act loop scans the programs in it and refuses one that holds a
    # credential, so a program runs as the model wrote it or not at all, never masked.
    verbatim: ModelResponse | None = Field(default=None, exclude=True, repr=False)

    def usage(self) -> Usage:
        """This call as recorded spend (a replayed call counts: its first answer was paid)."""
        u = self.response.usage
        return Usage(
            input_tokens=u.input_tokens,
            output_tokens=u.output_tokens,
            cache_read_tokens=u.cache_read_tokens,
            cache_creation_tokens=u.cache_creation_tokens,
            cost_usd=self.cost_usd or 0.0,
            model_calls=1,
        )
