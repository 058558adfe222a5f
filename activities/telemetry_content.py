"""A model call's prompt and response on its span, when the operator opts in (masked, then cut).

FORGE_TELEMETRY_CONTENT=masked (workers/settings_telemetry.py) makes the gateway record them as
the OpenTelemetry GenAI semantic conventions name them, each a JSON text:
`gen_ai.system_instructions` (the system prompt as text parts), `gen_ai.input.messages` (the
messages sent, each `{"role", "parts"}`) and `gen_ai.output.messages` (the answer, with its
`finish_reason`). Every text passes the guard's masking first and is then cut (`clip`: the
first CONTENT_PART_LIMIT characters of each part); the input keeps its latest messages that fit
in CONTENT_LIMIT characters. Off (the default) records none of them. The exporter masks every
span once more (workers/telemetry/masking.py).
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from compiler.ladder.secrets.mask import clip, mask_text

if TYPE_CHECKING:
    from opentelemetry.trace import Span

    from schemas.models import ModelRequest, ModelResponse

__all__ = [
    "CONTENT_LIMIT",
    "CONTENT_PART_LIMIT",
    "GEN_AI_INPUT_MESSAGES",
    "GEN_AI_OUTPUT_MESSAGES",
    "GEN_AI_SYSTEM_INSTRUCTIONS",
    "note_model_input",
    "note_model_output",
]

GEN_AI_SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
GEN_AI_INPUT_MESSAGES = "gen_ai.input.messages"
GEN_AI_OUTPUT_MESSAGES = "gen_ai.output.messages"

CONTENT_PART_LIMIT = 4096  # characters of one text part, kept from its start
CONTENT_LIMIT = 65536  # characters of gen_ai.input.messages: its latest messages that fit
_DEPTH = 32  # a tool call's arguments nested deeper are kept as (masked, cut) JSON text

# The conventions' finish reasons for the Messages API's stop reasons (others pass as they are).
_FINISH = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_call",
    "refusal": "content_filter",
}


def _cut(text: str, key: str | None = None) -> str:
    return clip(text, CONTENT_PART_LIMIT, key=key)[0]


def _plain(value: Any, key: str | None = None, depth: int = 0) -> Any:
    """A tool call's arguments with each string masked and cut, each field name masked."""
    if isinstance(value, str):
        return _cut(value, key)
    if depth > _DEPTH:
        return _cut(json.dumps(value, ensure_ascii=False))
    if isinstance(value, dict):
        return {mask_text(str(k))[0]: _plain(v, str(k), depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v, key, depth + 1) for v in value]
    return value


def _part(block: Any) -> dict[str, Any] | None:
    kind = block.type
    if kind == "text":
        return {"type": "text", "content": _cut(block.text)}
    if kind == "thinking":
        return {"type": "reasoning", "content": _cut(block.thinking)}
    if kind == "tool_use":
        return {
            "type": "tool_call",
            "id": _cut(block.id),
            "name": _cut(block.name),
            "arguments": _plain(block.input),
        }
    if kind == "tool_result":
        return {
            "type": "tool_call_response",
            "id": _cut(block.tool_use_id),
            "response": _cut(block.content),
        }
    return None  # redacted thinking: opaque data, never text


def _message(role: str, blocks: Any) -> dict[str, Any]:
    parts = [p for p in (_part(b) for b in blocks) if p is not None]
    # The conventions give tool results their own role; the Messages API sends them as "user".
    if parts and all(p["type"] == "tool_call_response" for p in parts):
        role = "tool"
    return {"role": role, "parts": parts}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def note_model_input(span: Span, request: ModelRequest) -> None:
    """The system prompt and the messages sent, on the call's span (masked, cut)."""
    if not span.is_recording():
        return
    kept: list[str] = []
    size = 2  # the brackets
    for message in reversed(request.messages):  # the latest messages are kept
        text = _json(_message(message.role, message.content))
        if kept and size + len(text) + 1 > CONTENT_LIMIT:
            break
        kept.append(text)
        size += len(text) + 1
    span.set_attributes(
        {
            GEN_AI_SYSTEM_INSTRUCTIONS: _json([{"type": "text", "content": _cut(request.system)}]),
            GEN_AI_INPUT_MESSAGES: "[" + ",".join(reversed(kept)) + "]",
        }
    )


def note_model_output(span: Span, response: ModelResponse) -> None:
    """The answer, on the call's span (masked, cut), with its finish reason."""
    if not span.is_recording():
        return
    message = _message("assistant", response.content)
    message["finish_reason"] = _FINISH.get(response.stop_reason, response.stop_reason)
    span.set_attribute(GEN_AI_OUTPUT_MESSAGES, _json([message]))
