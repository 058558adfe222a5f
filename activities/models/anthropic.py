"""The Anthropic provider: one Messages API call through the `anthropic` SDK, retries off."""

from __future__ import annotations

import json
import re
from typing import Any, assert_never, cast

import anthropic
from pydantic import ConfigDict, Field, ValidationError

from activities.masked_output import clipped
from activities.models.base import ModelError
from activities.models.script import prompt_hash
from schemas.base import FrozenModel
from schemas.error_codes import ErrorCode
from schemas.models import (
    Message,
    ModelRequest,
    ModelResponse,
    ModelUsage,
    RedactedThinkingBlock,
    ResponseBlock,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = [
    "ADAPTIVE_THINKING_FAMILIES",
    "ADAPTIVE_THINKING_MODELS",
    "DEFAULT_BASE_URL",
    "MIN_THINKING_BUDGET",
    "AnthropicProvider",
    "api_model",
    "failure_class_for_status",
    "request_params",
]

DEFAULT_BASE_URL = "https://api.anthropic.com"
MIN_THINKING_BUDGET = 1024  # the Messages API refuses a smaller budget_tokens
_PREFIX = "anthropic:"
_CACHE = {"type": "ephemeral"}
_STOP_REASONS: frozenset[str] = frozenset(
    {"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"}
)
# Stop reasons the API has added that ModelResponse folds into one it knows: the answer was cut
# short by a limit either way, and callers treat both the same.
_STOP_ALIASES: dict[str, StopReason] = {"model_context_window_exceeded": "max_tokens"}
_SHOWN = 300  # characters of an API error message quoted in ours


def api_model(binding_ref: str) -> str:
    """The API's model name of a binding ref: "anthropic:claude-opus-4-6" -> "claude-opus-4-6".

    Raises:
        ModelError: MODEL_REQUEST_INVALID when the ref names another provider or no model.
    """
    if not binding_ref.startswith(_PREFIX) or not binding_ref[len(_PREFIX) :]:
        raise ModelError(
            ErrorCode.MODEL_REQUEST_INVALID,
            f"model binding {binding_ref!r} is not an Anthropic model: the anthropic provider "
            "takes refs of the form 'anthropic:<model>', e.g. 'anthropic:claude-opus-4-6'; fix "
            "the binding's model_binding_ref in the execution profile",
        )
    return binding_ref[len(_PREFIX) :]


def failure_class_for_status(status: int) -> ErrorCode:
    """The failure class of an HTTP error status of the Messages API."""
    if status == 429:
        return ErrorCode.MODEL_RATE_LIMITED
    if status == 529:
        return ErrorCode.MODEL_OVERLOADED
    if status >= 500:
        return ErrorCode.MODEL_SERVER_ERROR
    if status == 408:
        return ErrorCode.MODEL_TIMEOUT
    # 402: the account cannot pay; like a refused key, only a person can fix it.
    if status in (401, 402, 403):
        return ErrorCode.MODEL_AUTH
    if 400 <= status < 500:
        return ErrorCode.MODEL_REQUEST_INVALID
    return ErrorCode.MODEL_BAD_RESPONSE


def request_params(request: ModelRequest, *, default_timeout_s: float) -> dict[str, Any]:
    """The keyword arguments of `messages.create` for `request`.

    Parameters dropped or changed, and why:
    - `temperature` is never sent. The pinned SDK (anthropic 2.x) speaks API version
      2026-10-21, which removed sampling parameters: `messages.create` no longer takes them
      and the API answers 400 to any value, even the default. (Extended thinking refused a
      non-default temperature before that, too.)
    - Extended thinking on a model that deprecates or refuses a fixed budget (the SDK's list,
      Claude 4.7 and later; `adaptive_thinking`): `thinking: {type: adaptive}` with
      `output_config.effort` mapped from the budget (`effort_for_budget`); max_tokens as asked.
    - Extended thinking (`thinking_budget_tokens` set) otherwise: the budget is raised to at
      least 1024 tokens (the API's minimum), and when `max_tokens` is not above the budget it
      becomes budget + max_tokens, since the API requires max_tokens > budget_tokens and the answer
      should keep the room the binding asked for after thinking.
    - `timeout_s` is the SDK's per-request timeout (`default_timeout_s` when unset).
    - An empty system prompt is not sent (the API refuses empty text blocks).

    Thinking and redacted_thinking blocks in assistant messages are sent back verbatim (text
    and signature, or data): with thinking on, the API refuses (400) a final assistant turn
    with tool_use that does not start with its thinking, and any thinking block that changed.

    With `cache_prefix`, the system block and the last tool are marked
    `cache_control: ephemeral`, which caches the prompt prefix up to them. Two headers carry
    the consumer and the prompt hash; the API ignores them, the local test server matches
    scripts by them.
    """
    params: dict[str, Any] = {
        "model": api_model(request.model),
        "messages": [_message(m) for m in request.messages],
        "max_tokens": request.max_tokens,
        "timeout": request.timeout_s or default_timeout_s,
        "extra_headers": {
            "x-forge-consumer": request.consumer,
            "x-forge-prompt-hash": prompt_hash(request),
        },
    }
    if request.system:
        system: dict[str, Any] = {"type": "text", "text": request.system}
        if request.cache_prefix:
            system["cache_control"] = _CACHE
        params["system"] = [system]
    if request.tools:
        tools: list[dict[str, Any]] = [
            {"name": t.name, "description": t.description, "input_schema": t.input_schema}
            for t in request.tools
        ]
        if request.cache_prefix:
            tools[-1] = {**tools[-1], "cache_control": _CACHE}
        params["tools"] = tools
    if request.thinking_budget_tokens is not None:
        budget = max(request.thinking_budget_tokens, MIN_THINKING_BUDGET)
        if adaptive_thinking(params["model"]):
            params["thinking"] = {"type": "adaptive"}
            params["output_config"] = {"effort": effort_for_budget(budget)}
        else:
            params["thinking"] = {"type": "enabled", "budget_tokens": budget}
            if request.max_tokens <= budget:
                params["max_tokens"] = budget + request.max_tokens
    return params


# Forge's own statement of which models take adaptive thinking (an effort level) instead of a
# fixed thinking budget; the SDK keeps its view private, so it is stated here, in one place.
# tests/models/test_adaptive_thinking_drift.py tells when the installed SDK's view differs.
# Named models: the SDK warns when they are sent `thinking.type: enabled`.
ADAPTIVE_THINKING_MODELS: frozenset[str] = frozenset({"claude-opus-4-6", "claude-mythos-preview"})
# Every Claude 4.7 or later answers 400 to `type: enabled`.
ADAPTIVE_THINKING_FAMILIES = re.compile(
    r"^claude-(opus|sonnet|haiku)-4-([7-9]|\d{2,})|^claude-(opus|sonnet|haiku)-[5-9]"
)


def adaptive_thinking(model: str) -> bool:
    """Whether `model` takes adaptive thinking (with an effort level) instead of a budget."""
    return model in ADAPTIVE_THINKING_MODELS or ADAPTIVE_THINKING_FAMILIES.match(model) is not None


def effort_for_budget(budget: int) -> str:
    """The effort level closest to a binding's thinking budget (adaptive thinking has no budget).

    Up to 2,048 tokens: low; up to 8,192: medium; up to 24,576: high; more: max.
    """
    if budget <= 2048:
        return "low"
    if budget <= 8192:
        return "medium"
    if budget <= 24576:
        return "high"
    return "max"


def _message(message: Message) -> dict[str, Any]:
    """One message on the wire; thinking blocks go back exactly as the API returned them."""
    blocks: list[dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            blocks.append({"type": "text", "text": block.text})
        elif isinstance(block, ToolUseBlock):
            blocks.append(
                {"type": "tool_use", "id": block.id, "name": block.name, "input": block.input}
            )
        elif isinstance(block, ToolResultBlock):
            result: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": block.tool_use_id,
                "content": block.content,
            }
            if block.is_error:
                result["is_error"] = True
            blocks.append(result)
        elif isinstance(block, ThinkingBlock):
            blocks.append(
                {"type": "thinking", "thinking": block.thinking, "signature": block.signature}
            )
        elif isinstance(block, RedactedThinkingBlock):
            blocks.append({"type": "redacted_thinking", "data": block.data})
        else:
            assert_never(block)
    return {"role": message.role, "content": blocks}


class AnthropicProvider:
    """Calls the Messages API with the `anthropic` SDK; the SDK's own retries are off.

    Temporal retries the activity instead (DESIGN §4), so every failure surfaces at once as a
    ModelError whose failure class says whether a retry can help.
    """

    name = "anthropic"
    # Priced by Anthropic's table whatever ANTHROPIC_BASE_URL says: a proxy bills the same tokens.
    billed = True

    def __init__(
        self, api_key: str, *, base_url: str | None = None, default_timeout_s: float = 600.0
    ) -> None:
        if not api_key:
            raise ValueError(
                "AnthropicProvider needs an API key: set ANTHROPIC_API_KEY, or use "
                "FORGE_MODEL_SCRIPT for scripted answers"
            )
        if default_timeout_s <= 0:
            raise ValueError(f"default_timeout_s must be above 0 seconds, not {default_timeout_s}")
        self._api_key = api_key
        self.base_url = base_url or DEFAULT_BASE_URL
        self.default_timeout_s = default_timeout_s
        # An explicit base_url keeps the SDK from reading ANTHROPIC_BASE_URL on its own:
        # configuration is read once, in workers/. The same for its OpenTelemetry tracing: a
        # given option keeps it from reading ANTHROPIC_OPEN_TELEMETRY*, whose content mode would
        # put prompts and answers in a trace unmasked. The call's span is Forge's own (`chat`,
        # activities/telemetry_spans.py), and no trace context is sent to the provider.
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=self.base_url,
            max_retries=0,
            open_telemetry={"traces": {"enabled": False}, "propagation": False},
        )

    def close(self) -> None:
        """Close the HTTP connection pool."""
        self._client.close()

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request, or raise ModelError (see `failure_class_for_status`)."""
        params = request_params(request, default_timeout_s=self.default_timeout_s)
        try:
            raw = self._client.messages.with_raw_response.create(**params)
            body = raw.http_response.content
        except anthropic.APIError as exc:
            raise self._error(exc, request, params["timeout"]) from None
        return _parse_response(body, request.model)

    def _error(self, exc: anthropic.APIError, request: ModelRequest, timeout: float) -> ModelError:
        where = f"the {request.consumer} call to {request.model} at {self.base_url}"
        if isinstance(exc, anthropic.APITimeoutError):
            return ModelError(
                ErrorCode.MODEL_TIMEOUT,
                f"{where} got no answer within {timeout:g}s; the call is retried. If it keeps "
                "timing out, raise the binding's timeout_ms or lower its max_tokens",
            )
        if isinstance(exc, anthropic.APIConnectionError):
            return ModelError(
                ErrorCode.MODEL_CONNECTION,
                f"{where} could not connect ({self._scrub(str(exc.__cause__ or exc))}); the "
                "call is retried. Check the network, egress rules and ANTHROPIC_BASE_URL",
            )
        if isinstance(exc, anthropic.APIStatusError):
            return self._status_error(exc, where)
        # APIResponseValidationError and any other answer the SDK could not read.
        return ModelError(
            ErrorCode.MODEL_BAD_RESPONSE,
            f"{where} answered with something that is not a Messages response: "
            f"{clipped(self._scrub(exc.message), _SHOWN, 'failure')}; the call is retried",
        )

    def _status_error(self, exc: anthropic.APIStatusError, where: str) -> ModelError:
        status = exc.status_code
        failure = failure_class_for_status(status)
        said = clipped(self._scrub(_api_message(exc.body)), _SHOWN, "failure")
        request_id = f", request-id {exc.request_id}" if exc.request_id else ""
        detail = f"HTTP {status}{request_id}: {said}"
        advice = {
            "MODEL_RATE_LIMITED": "the call is retried with backoff; if it persists, lower the "
            "run's parallelism or raise the organization's rate limit",
            "MODEL_OVERLOADED": "the API is overloaded; the call is retried with backoff",
            "MODEL_SERVER_ERROR": "the API failed; the call is retried with backoff",
            "MODEL_TIMEOUT": "the call is retried",
            "MODEL_AUTH": "the key was refused (it is not shown here); check ANTHROPIC_API_KEY, "
            "its workspace's access to this model, and the account's billing",
            "MODEL_REQUEST_INVALID": "the request itself was refused and is not retried; fix "
            "the binding (model name, max_tokens, thinking budget) or the prompt it sends",
        }.get(failure, "the call is retried")
        return ModelError(failure, f"{where} failed with {detail}; {advice}")

    def _scrub(self, text: str) -> str:
        return text.replace(self._api_key, "[api key]") if self._api_key else text


def _api_message(body: object) -> str:
    """`error.message` of an API error body, or the body itself when it has none."""
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return str(error["message"])
    if body is None:
        return "(no body)"
    return body if isinstance(body, str) else json.dumps(body, default=str)


class _WireUsage(FrozenModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    input_tokens: int = Field(ge=0)
    output_tokens: int = Field(ge=0)
    cache_read_input_tokens: int | None = Field(default=None, ge=0)
    cache_creation_input_tokens: int | None = Field(default=None, ge=0)


class _WireMessage(FrozenModel):
    """The fields of a Messages API response Forge reads; the API may add others."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    type: str
    role: str
    model: str
    content: list[dict[str, Any]]
    stop_reason: str | None
    usage: _WireUsage


def _parse_response(body: bytes, binding_ref: str) -> ModelResponse:
    def bad(why: str) -> ModelError:
        return ModelError(
            ErrorCode.MODEL_BAD_RESPONSE,
            f"the answer of {binding_ref} is not a valid Messages response: {why}; the call is "
            "retried (if it persists, check ANTHROPIC_BASE_URL points at the Messages API)",
        )

    try:
        wire = _WireMessage.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(x) for x in first["loc"]) or "(body)"
        begins = clipped(body.decode("utf-8", "replace"), 120, "failure")
        raise bad(f"{where}: {first['msg']} (body begins {begins!r})") from None
    if wire.type != "message" or wire.role != "assistant":
        raise bad(f"type {wire.type!r} role {wire.role!r}, expected an assistant message")
    stop = _STOP_ALIASES.get(wire.stop_reason or "", wire.stop_reason)
    if stop not in _STOP_REASONS:
        raise bad(f"unknown stop_reason {wire.stop_reason!r}")
    content: list[ResponseBlock] = []
    for index, block in enumerate(wire.content):
        kind = block.get("type")
        try:
            if kind == "text":
                content.append(TextBlock(text=block["text"]))
            elif kind == "tool_use":
                content.append(
                    ToolUseBlock(id=block["id"], name=block["name"], input=block["input"])
                )
            elif kind == "thinking":
                # Kept with its signature: a tool loop must send it back unchanged.
                content.append(
                    ThinkingBlock(thinking=block["thinking"], signature=block["signature"])
                )
            elif kind == "redacted_thinking":
                content.append(RedactedThinkingBlock(data=block["data"]))
            else:
                raise bad(f"content[{index}] has type {kind!r}, which Forge does not request")
        except (KeyError, ValidationError) as exc:
            raise bad(f"content[{index}] ({kind}) is incomplete: {exc}") from None
    usage = wire.usage
    return ModelResponse(
        model=wire.model,
        content=content,
        stop_reason=cast(StopReason, stop),  # checked against _STOP_REASONS above
        usage=ModelUsage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_input_tokens or 0,
            cache_creation_tokens=usage.cache_creation_input_tokens or 0,
        ),
    )
