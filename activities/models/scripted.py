"""The scripted provider: answers from a model script, for tests, demos and offline runs."""

from __future__ import annotations

from typing import assert_never

from activities.models.anthropic import failure_class_for_status
from activities.models.base import ModelError
from activities.models.script import (
    Script,
    ScriptAnswer,
    ScriptRedactedThinking,
    ScriptText,
    ScriptThinking,
    ScriptToolUse,
    ScriptUnmatched,
)
from schemas.error_codes import ErrorCode
from schemas.models import (
    ModelRequest,
    ModelResponse,
    RedactedThinkingBlock,
    ResponseBlock,
    TextBlock,
    ThinkingBlock,
    ToolUseBlock,
)

__all__ = ["ScriptedProvider"]

_STOP_REASONS = frozenset(
    {"end_turn", "tool_use", "max_tokens", "stop_sequence", "pause_turn", "refusal"}
)


class ScriptedProvider:
    """Answers every request from one Script, as the Messages API would have.

    A scripted error raises the ModelError its HTTP status maps to (the Anthropic provider's
    mapping); `malformed` raises MODEL_BAD_RESPONSE; a `delay_s` longer than the request's
    timeout raises MODEL_TIMEOUT (nothing sleeps). A request no entry answers raises
    MODEL_UNAVAILABLE, which is not retried: the script, not the model, needs fixing.
    """

    name = "scripted"
    billed = False  # a script's answers cost nothing: recorded at $0, never at a model's price

    def __init__(self, script: Script) -> None:
        self.script = script

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request from the script, or raise ModelError."""
        try:
            answer = self.script.answer(request)
        except ScriptUnmatched as exc:
            raise ModelError(ErrorCode.MODEL_UNAVAILABLE, str(exc)) from None
        where = f"scripted answer (entry {answer.entry}, use {answer.use} of {self.script.source})"
        if request.timeout_s is not None and answer.delay_s > request.timeout_s:
            raise ModelError(
                ErrorCode.MODEL_TIMEOUT,
                f"{where} to the {request.consumer} call to {request.model} takes "
                f"{answer.delay_s:g}s, longer than its timeout of {request.timeout_s:g}s",
            )
        if answer.failure is not None:
            raise _failure(answer, request, where)
        if answer.stop_reason not in _STOP_REASONS:
            raise ModelError(
                ErrorCode.MODEL_BAD_RESPONSE,
                f"{where} has stop_reason {answer.stop_reason!r}, which is not a Messages API "
                f"stop reason (one of {', '.join(sorted(_STOP_REASONS))})",
            )
        content: list[ResponseBlock] = []
        for block in answer.content:
            if isinstance(block, ScriptText):
                content.append(TextBlock(text=block.text))
            elif isinstance(block, ScriptToolUse):
                assert block.id is not None  # Script.answer fills every tool_use id
                content.append(ToolUseBlock(id=block.id, name=block.name, input=block.input))
            elif isinstance(block, ScriptThinking):
                assert block.signature is not None  # Script.answer fills every signature
                content.append(ThinkingBlock(thinking=block.thinking, signature=block.signature))
            elif isinstance(block, ScriptRedactedThinking):
                content.append(RedactedThinkingBlock(data=block.data))
            else:
                assert_never(block)
        return ModelResponse.model_validate(
            {
                "model": request.model,
                "content": content,
                "stop_reason": answer.stop_reason,
                "usage": answer.usage,
            }
        )


def _failure(answer: ScriptAnswer, request: ModelRequest, where: str) -> ModelError:
    failure = answer.failure
    assert failure is not None
    call = f"the {request.consumer} call to {request.model}"
    if failure.malformed:
        return ModelError(
            ErrorCode.MODEL_BAD_RESPONSE,
            f"{where} to {call} is a malformed body, not a Messages response (scripted)",
        )
    assert failure.status is not None  # ScriptFailure holds status unless malformed
    said = failure.message or "scripted error"
    return ModelError(
        failure_class_for_status(failure.status),
        f"{where} to {call} failed with HTTP {failure.status}: {said} (scripted)",
    )
