"""FORGE_TELEMETRY_CONTENT=masked: a model call's span carries its prompt and response (GenAI
conventions), every credential masked and every part cut; off (the default) carries neither."""

import json
import random

from activities.compile.typelib import load_prices
from activities.models.gateway import ModelGateway
from activities.telemetry_content import (
    CONTENT_LIMIT,
    CONTENT_PART_LIMIT,
    GEN_AI_INPUT_MESSAGES,
    GEN_AI_OUTPUT_MESSAGES,
    GEN_AI_SYSTEM_INSTRUCTIONS,
)
from schemas.models import Message, TextBlock, ToolResultBlock, ToolUseBlock
from tests.guard.corpus import CREDENTIALS, generator, secret
from tests.models.test_gateway import USAGE, Serving, make_request, make_scope
from tests.spans.conftest import by_name

SAMPLES = [generator(name)(random.Random(name)) for name in CREDENTIALS]
HIDDEN = [secret(name, s) for name, s in zip(CREDENTIALS, SAMPLES, strict=True)]
CONTENT = (GEN_AI_SYSTEM_INSTRUCTIONS, GEN_AI_INPUT_MESSAGES, GEN_AI_OUTPUT_MESSAGES)


def _gateway(stores, provider, *, content: bool) -> ModelGateway:
    return ModelGateway(
        stores.events,
        stores.artifacts,
        load_prices(),
        {"anthropic": provider},
        record_content=content,
    )


def _answer() -> dict:
    # The model answers with every sample: in its text and in a tool call's arguments.
    return {
        "response": {
            "content": [
                {"type": "text", "text": "found: " + " | ".join(SAMPLES)},
                {
                    "type": "tool_use",
                    "id": "tu_1",
                    "name": "run_python",
                    "input": {"code": SAMPLES},
                },
            ],
            "stop_reason": "tool_use",
            "usage": USAGE,
        }
    }


def _request():
    turns = [
        Message(role="user", content=[TextBlock(text="Audit these: " + " ; ".join(SAMPLES))]),
        Message(
            role="assistant",
            content=[ToolUseBlock(id="tu_0", name="run_python", input={"code": "print(1)"})],
        ),
        Message(role="user", content=[ToolResultBlock(tool_use_id="tu_0", content="x" * 9000)]),
    ]
    return make_request(system="You audit bills. " + SAMPLES[0], messages=turns)


def test_content_on_records_the_prompt_and_answer_masked_and_cut(stores, spans):
    with Serving(_answer()) as (_server, provider):
        _gateway(stores, provider, content=True).call(_request(), make_scope())
    (span,) = by_name(spans, "chat ")
    attrs = dict(span.attributes or {})
    exported = span.to_json()
    assert [h[:12] for h in HIDDEN if h in exported] == []
    system = json.loads(attrs[GEN_AI_SYSTEM_INSTRUCTIONS])
    assert system[0]["type"] == "text" and system[0]["content"].startswith("You audit bills. ")
    assert "[REDACTED:" in system[0]["content"]
    sent = json.loads(attrs[GEN_AI_INPUT_MESSAGES])
    assert [m["role"] for m in sent] == ["user", "assistant", "tool"]
    assert sent[0]["parts"][0]["content"].count("[REDACTED:") >= len(SAMPLES) // 2
    call = sent[1]["parts"][0]
    assert (call["type"], call["name"], call["arguments"]) == (
        "tool_call",
        "run_python",
        {"code": "print(1)"},
    )
    result = sent[2]["parts"][0]
    assert result["type"] == "tool_call_response" and result["id"] == "tu_0"
    assert result["response"] == "x" * CONTENT_PART_LIMIT  # cut to the documented limit
    (answer,) = json.loads(attrs[GEN_AI_OUTPUT_MESSAGES])
    assert answer["role"] == "assistant" and answer["finish_reason"] == "tool_call"
    text, tool = answer["parts"]
    assert text["type"] == "text" and "[REDACTED:" in text["content"]
    assert tool["type"] == "tool_call" and all("[REDACTED:" in c for c in tool["arguments"]["code"])
    assert len(attrs[GEN_AI_INPUT_MESSAGES]) <= CONTENT_LIMIT


def test_the_input_keeps_its_latest_messages_within_the_limit(stores, spans):
    many = [
        Message(
            role="user" if i % 2 == 0 else "assistant",
            content=[TextBlock(text=f"{i} " + "y" * 5000)],
        )
        for i in range(41)
    ]
    with Serving(_answer()) as (_server, provider):
        _gateway(stores, provider, content=True).call(make_request(messages=many), make_scope())
    (span,) = by_name(spans, "chat ")
    recorded = dict(span.attributes or {})[GEN_AI_INPUT_MESSAGES]
    sent = json.loads(recorded)
    assert len(recorded) <= CONTENT_LIMIT and 1 < len(sent) < len(many)
    assert sent[-1]["parts"][0]["content"].startswith("40 ")  # the latest kept, in order
    firsts = [int(m["parts"][0]["content"].split()[0]) for m in sent]
    assert firsts == list(range(41 - len(sent), 41))


def test_content_off_records_neither(stores, spans):
    with Serving(_answer()) as (_server, provider):
        _gateway(stores, provider, content=False).call(_request(), make_scope())
    (span,) = by_name(spans, "chat ")
    attrs = dict(span.attributes or {})
    assert not set(CONTENT) & set(attrs)
    assert "Audit these" not in span.to_json() and "found: " not in span.to_json()
