"""AnthropicProvider through the real `anthropic` SDK against a local Messages API server."""

import socket
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from activities.models.anthropic import (
    AnthropicProvider,
    adaptive_thinking,
    effort_for_budget,
    request_params,
)
from activities.models.base import ModelError
from activities.models.script import Script, prompt_hash, thinking_signature
from schemas.models import (
    Message,
    ModelRequest,
    ModelResponse,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.support.messages_server import MessagesServer

KEY = "sk-ant-test-0123456789"
MODEL = "anthropic:claude-sonnet-4-6"


def make_request(text: str = "hello", **fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": MODEL,
        "consumer": "executor",
        "system": "You are terse.",
        "messages": [Message(role="user", content=[TextBlock(text=text)])],
        "max_tokens": 256,
    }
    values.update(fields)
    return ModelRequest(**values)


@contextmanager
def serving(
    *entries: dict[str, Any], api_key: str | None = KEY
) -> Iterator[tuple[MessagesServer, AnthropicProvider]]:
    with MessagesServer(Script.from_data({"responses": list(entries)}), api_key=api_key) as server:
        provider = AnthropicProvider(KEY, base_url=server.base_url)
        try:
            yield server, provider
        finally:
            provider.close()


def text_reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"response": {"content": [{"type": "text", "text": text}], **extra}}


def test_text_answer_goes_over_the_wire_as_a_messages_request() -> None:
    request = make_request("What is 2+2?", temperature=0.3, consumer="planner")
    with serving(text_reply("4")) as (server, provider):
        response = provider.complete(request)
    assert response.text == "4"
    assert response.model == "claude-sonnet-4-6"
    assert response.stop_reason == "end_turn"
    assert response.tool_uses == []
    (body,) = server.requests
    assert body["model"] == "claude-sonnet-4-6"
    assert body["system"] == [{"type": "text", "text": "You are terse."}]
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}
    ]
    assert body["max_tokens"] == 256
    # API 2026-10-21 (SDK 2.x) refuses sampling parameters: temperature is dropped.
    assert "temperature" not in body
    assert "thinking" not in body
    (headers,) = server.headers
    assert headers["authorization"] == f"Bearer {KEY}"
    assert headers["x-forge-consumer"] == "planner"
    assert headers["x-forge-prompt-hash"] == prompt_hash(request)
    assert headers["x-stainless-retry-count"] == "0"


def test_tool_use_answer_and_tool_results_on_the_wire() -> None:
    tool = ToolDef(
        name="read_file",
        description="Read a file",
        input_schema={"type": "object", "properties": {"path": {"type": "string"}}},
    )
    request = make_request(
        tools=[tool],
        messages=[
            Message(role="user", content=[TextBlock(text="read a.txt")]),
            Message(
                role="assistant",
                content=[ToolUseBlock(id="toolu_1", name="read_file", input={"path": "a.txt"})],
            ),
            Message(
                role="user",
                content=[
                    ToolResultBlock(tool_use_id="toolu_1", content="no such file", is_error=True)
                ],
            ),
        ],
    )
    reply = {
        "response": {
            "content": [
                {"type": "text", "text": "Trying b.txt"},
                {
                    "type": "tool_use",
                    "id": "toolu_given",
                    "name": "read_file",
                    "input": {"path": "b.txt"},
                },
                {"type": "tool_use", "name": "read_file", "input": {"path": "c.txt"}},
            ]
        }
    }
    with serving(reply) as (server, provider):
        response = provider.complete(request)
    assert response.stop_reason == "tool_use"
    assert response.text == "Trying b.txt"
    first, second = response.tool_uses
    assert (first.id, first.name, first.input) == ("toolu_given", "read_file", {"path": "b.txt"})
    assert second.id.startswith("toolu_") and second.id != first.id
    body = server.requests[0]
    assert body["tools"] == [tool.model_dump(mode="json")]
    assert body["messages"][1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": "read_file", "input": {"path": "a.txt"}}
    ]
    assert body["messages"][2]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "content": "no such file",
            "is_error": True,
        }
    ]


def test_usage_includes_cache_tokens() -> None:
    usage = {
        "input_tokens": 1200,
        "output_tokens": 80,
        "cache_read_input_tokens": 5000,
        "cache_creation_input_tokens": 700,
    }
    with serving(text_reply("ok", usage=usage)) as (_, provider):
        response = provider.complete(make_request())
    assert response.usage.model_dump() == {
        "input_tokens": 1200,
        "output_tokens": 80,
        "cache_read_tokens": 5000,
        "cache_creation_tokens": 700,
    }


def test_null_cache_usage_counts_as_zero() -> None:
    body = (
        '{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-6",'
        '"content":[{"type":"text","text":"ok"}],"stop_reason":"end_turn","stop_sequence":null,'
        '"usage":{"input_tokens":3,"output_tokens":1,"cache_read_input_tokens":null,'
        '"cache_creation_input_tokens":null}}'
    )
    with serving({"error": {"malformed": True, "body": body}}) as (_, provider):
        response = provider.complete(make_request())
    assert response.usage.cache_read_tokens == 0
    assert response.usage.cache_creation_tokens == 0
    assert response.text == "ok"


def test_thinking_params_raise_budget_and_max_tokens_and_drop_temperature() -> None:
    request = make_request(thinking_budget_tokens=500, max_tokens=800, temperature=0.7)
    reply = {
        "response": {
            "content": [
                {"type": "thinking", "thinking": "Let me think about it"},
                {"type": "redacted_thinking"},
                {"type": "text", "text": "42"},
            ]
        }
    }
    with serving(reply) as (server, provider):
        response = provider.complete(request)
    body = server.requests[0]
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert body["max_tokens"] == 1024 + 800
    assert body["max_tokens"] > body["thinking"]["budget_tokens"]
    assert "temperature" not in body
    # thinking blocks are kept, in order, and are not text
    assert response.content[:2] == [
        ThinkingBlock(
            thinking="Let me think about it", signature=thinking_signature("Let me think about it")
        ),
        RedactedThinkingBlock(data="scripted-redacted"),
    ]
    assert [b.type for b in response.content] == ["thinking", "redacted_thinking", "text"]
    assert response.text == "42"
    assert response.tool_uses == []


def test_thinking_keeps_max_tokens_already_above_the_budget() -> None:
    params = request_params(
        make_request(thinking_budget_tokens=2000, max_tokens=8000), default_timeout_s=60
    )
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 2000}
    assert params["max_tokens"] == 8000


def test_models_that_deprecate_a_thinking_budget_get_adaptive_thinking_with_an_effort() -> None:
    # The SDK warns for a fixed budget on claude-opus-4-6, and Claude 4.7+ refuse it: those
    # get thinking.type=adaptive, the budget mapped to an effort level; no warning is raised.
    for model, budget, effort in (
        ("anthropic:claude-opus-4-6", 2048, "low"),
        ("anthropic:claude-opus-4-7", 4096, "medium"),
        ("anthropic:claude-sonnet-5-0", 16384, "high"),
    ):
        request = make_request(model=model, thinking_budget_tokens=budget, max_tokens=800)
        with serving(text_reply("ok")) as (server, provider):
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                provider.complete(request)
        body = server.requests[0]
        assert body["thinking"] == {"type": "adaptive"}
        assert body["output_config"] == {"effort": effort}
        assert body["max_tokens"] == 800
    assert not adaptive_thinking("claude-sonnet-4-6") and effort_for_budget(30000) == "max"


def test_cache_control_marks_system_and_last_tool_when_cache_prefix() -> None:
    tools = [
        ToolDef(name=f"tool_{i}", description=f"tool {i}", input_schema={"type": "object"})
        for i in range(3)
    ]
    with serving(text_reply("a"), text_reply("b")) as (server, provider):
        provider.complete(make_request(tools=tools, cache_prefix=True))
        provider.complete(make_request(tools=tools, cache_prefix=False))
    cached, plain = server.requests
    assert cached["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert [("cache_control" in t) for t in cached["tools"]] == [False, False, True]
    assert cached["tools"][-1]["cache_control"] == {"type": "ephemeral"}
    assert "cache_control" not in plain["system"][0]
    assert not any("cache_control" in t for t in plain["tools"])


def test_empty_system_prompt_is_not_sent() -> None:
    with serving(text_reply("ok")) as (server, provider):
        provider.complete(make_request(system=""))
    assert "system" not in server.requests[0]


@pytest.mark.parametrize(
    ("status", "failure_class", "retryable"),
    [
        (429, "MODEL_RATE_LIMITED", True),
        (529, "MODEL_OVERLOADED", True),
        (500, "MODEL_SERVER_ERROR", True),
        (503, "MODEL_SERVER_ERROR", True),
        (400, "MODEL_REQUEST_INVALID", False),
        (404, "MODEL_REQUEST_INVALID", False),
        (413, "MODEL_REQUEST_INVALID", False),
        (422, "MODEL_REQUEST_INVALID", False),
        (401, "MODEL_AUTH", False),
        (403, "MODEL_AUTH", False),
    ],
)
def test_each_error_status_maps_to_its_class_with_exactly_one_request(
    status: int, failure_class: str, retryable: bool
) -> None:
    failing = {"error": {"status": status, "message": f"scripted {status}"}}
    with serving(failing, text_reply("never reached")) as (server, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
        # The SDK's own retries are off: the one failure is the only request.
        assert server.request_count == 1
    error = caught.value
    assert error.failure_class == failure_class
    assert error.retryable is retryable
    assert f"HTTP {status}" in error.message
    assert f"scripted {status}" in error.message
    assert "executor call to anthropic:claude-sonnet-4-6" in error.message
    assert KEY not in error.message


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (None, "Invalid JSON"),
        ('{"type": "message", "role": "assistant"}', "model"),
        ("<html>bad gateway</html>", "Invalid JSON"),
        (
            '{"type":"message","role":"assistant","model":"m","content":[{"type":"text"}],'
            '"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}',
            "content[0]",
        ),
        (
            '{"type":"message","role":"assistant","model":"m","content":[{"type":"thinking",'
            '"thinking":"hm"}],"stop_reason":"end_turn","usage":{"input_tokens":1,'
            '"output_tokens":1}}',
            "content[0] (thinking) is incomplete",
        ),
        (
            '{"type":"message","role":"assistant","model":"m","content":[{"type":'
            '"redacted_thinking"}],"stop_reason":"end_turn","usage":{"input_tokens":1,'
            '"output_tokens":1}}',
            "content[0] (redacted_thinking) is incomplete",
        ),
    ],
)
def test_malformed_body_is_a_bad_response(body: str | None, why: str) -> None:
    malformed: dict[str, Any] = {"malformed": True}
    if body is not None:
        malformed["body"] = body
    with serving({"error": malformed}) as (server, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
        assert server.request_count == 1
    assert caught.value.failure_class == "MODEL_BAD_RESPONSE"
    assert caught.value.retryable
    assert why in caught.value.message


def test_unknown_stop_reason_is_a_bad_response() -> None:
    with serving(text_reply("?", stop_reason="daydreaming")) as (_, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
    assert caught.value.failure_class == "MODEL_BAD_RESPONSE"
    assert "'daydreaming'" in caught.value.message


def test_context_window_stop_reason_reads_as_max_tokens() -> None:
    with serving(text_reply("cut", stop_reason="model_context_window_exceeded")) as (_, provider):
        assert provider.complete(make_request()).stop_reason == "max_tokens"


def test_a_refused_key_is_an_auth_error_that_never_shows_the_key() -> None:
    with serving(text_reply("never"), api_key="sk-ant-the-right-key") as (server, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
        assert server.request_count == 1
    assert caught.value.failure_class == "MODEL_AUTH"
    assert not caught.value.retryable
    assert "ANTHROPIC_API_KEY" in caught.value.message
    assert KEY not in caught.value.message


def test_the_key_is_scrubbed_from_api_messages() -> None:
    echo = {"error": {"status": 400, "message": f"bad request for key {KEY}"}}
    with serving(echo) as (_, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
    assert KEY not in caught.value.message
    assert "[api key]" in caught.value.message


def test_timeout_is_model_timeout_after_one_request() -> None:
    slow = {"delay_s": 2.0, **text_reply("too late")}
    with serving(slow) as (server, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request(timeout_s=0.3))
        assert server.request_count == 1
    assert caught.value.failure_class == "MODEL_TIMEOUT"
    assert "0.3s" in caught.value.message


def test_unreachable_server_is_a_connection_error() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = AnthropicProvider(KEY, base_url=f"http://127.0.0.1:{port}")
    try:
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request())
    finally:
        provider.close()
    assert caught.value.failure_class == "MODEL_CONNECTION"
    assert f"127.0.0.1:{port}" in caught.value.message
    assert "ANTHROPIC_BASE_URL" in caught.value.message


def test_a_ref_of_another_provider_is_refused_without_a_request() -> None:
    with serving(text_reply("never")) as (server, provider):
        with pytest.raises(ModelError) as caught:
            provider.complete(make_request(model="openai:gpt-5"))
        assert server.request_count == 0
    assert caught.value.failure_class == "MODEL_REQUEST_INVALID"
    assert "'openai:gpt-5'" in caught.value.message
    assert "anthropic:<model>" in caught.value.message


def test_unknown_paths_answer_404_json() -> None:
    import json
    import urllib.error
    import urllib.request

    with MessagesServer(Script.from_data({"responses": []})) as server:
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(f"{server.base_url}/v1/complete", data=b"{}", timeout=5)
        with caught.value as response:
            body = json.loads(response.read())
        assert caught.value.code == 404
        assert body["type"] == "error"
        assert body["error"]["type"] == "not_found_error"
        assert server.request_count == 1
        assert server.requests == []


def test_an_empty_key_is_refused_at_construction() -> None:
    with pytest.raises(ValueError, match="ANTHROPIC_API_KEY"):
        AnthropicProvider("")


# ---- extended thinking in a tool loop ---------------------------------------------------------

RUN_PYTHON = ToolDef(
    name="run_python",
    description="Run a Python program",
    input_schema={"type": "object", "properties": {"code": {"type": "string"}}},
)
SIGNED = {"type": "thinking", "thinking": "Sum them with code", "signature": "EqQBCkYIBxgCKkA="}


def thinking_request(*messages: Message) -> ModelRequest:
    return make_request(
        messages=[Message(role="user", content=[TextBlock(text="Sum the invoices")]), *messages],
        tools=[RUN_PYTHON],
        thinking_budget_tokens=2048,
        max_tokens=4096,
    )


def assistant_turn(response: ModelResponse) -> Message:
    """The assistant message the Code-Act executor sends back (activities/harness/codeact.py,
    `_assistant`): the response's content as it came, minus empty text blocks."""
    kept = [b for b in response.content if not (isinstance(b, TextBlock) and not b.text)]
    return Message(role="assistant", content=kept or [TextBlock(text="(no text)")])


def tool_results(response: ModelResponse, output: str) -> Message:
    return Message(
        role="user",
        content=[ToolResultBlock(tool_use_id=u.id, content=output) for u in response.tool_uses],
    )


def loop_script(*first_blocks: dict[str, Any]) -> list[dict[str, Any]]:
    """Turn 1 thinks and calls run_python; turn 2 (seeing the tool result) answers."""
    call = {"type": "tool_use", "name": "run_python", "input": {"code": "print(40 + 2)"}}
    return [
        {
            "when": {"last_contains": "Sum the invoices"},
            "response": {"content": [*first_blocks, call]},
        },
        {
            "when": {"last_contains": "42"},
            "response": {
                "content": [
                    {"type": "thinking", "thinking": "The program printed 42"},
                    {"type": "text", "text": "Total: 42"},
                ]
            },
        },
    ]


@pytest.mark.parametrize(
    "first_blocks",
    [
        [{"type": "thinking", "thinking": "Sum them with code"}],
        [SIGNED],
        [{"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"}, SIGNED],
    ],
    ids=["generated-signature", "given-signature", "redacted-first"],
)
def test_a_tool_loop_with_thinking_sends_the_signed_blocks_back(
    first_blocks: list[dict[str, Any]],
) -> None:
    with serving(*loop_script(*first_blocks)) as (server, provider):
        first = provider.complete(thinking_request())
        assistant = assistant_turn(first)
        second = provider.complete(thinking_request(assistant, tool_results(first, "42")))
        assert server.script.remaining() == [0, 0]
    # the thinking comes back with its signature (or data), before the tool call
    thinking = [b.model_dump(mode="json") for b in first.content[:-1]]
    expected = [
        {**b, "signature": b.get("signature") or thinking_signature(b["thinking"])}
        if b["type"] == "thinking"
        else b
        for b in first_blocks
    ]
    assert thinking == expected
    assert first.stop_reason == "tool_use" and first.text == ""
    assert [u.input for u in first.tool_uses] == [{"code": "print(40 + 2)"}]
    # and goes back over the wire exactly as it came, first in the assistant turn
    sent = server.requests[1]["messages"][1]
    assert sent["role"] == "assistant"
    assert sent["content"] == [*expected, first.tool_uses[0].model_dump(mode="json")]
    assert second.text == "Total: 42"
    assert isinstance(second.content[0], ThinkingBlock)
    assert second.content[0].signature == thinking_signature("The program printed 42")


def test_a_tool_loop_without_its_thinking_is_refused_as_the_api_does() -> None:
    with serving(*loop_script({"type": "thinking", "thinking": "Sum them with code"})) as (
        server,
        provider,
    ):
        first = provider.complete(thinking_request())
        assistant = assistant_turn(first)
        stripped = Message(role="assistant", content=list(first.tool_uses))
        with pytest.raises(ModelError) as caught:
            provider.complete(thinking_request(stripped, tool_results(first, "42")))
        assert server.request_count == 2
        # refused before the script was asked: the second answer is still there
        assert server.script.remaining() == [0, 1]
        # the same loop with its thinking goes through
        provider.complete(thinking_request(assistant, tool_results(first, "42")))
    error = caught.value
    assert error.failure_class == "MODEL_REQUEST_INVALID"
    assert not error.retryable
    assert "HTTP 400" in error.message
    assert (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        "`tool_use`"
    ) in error.message


def test_a_changed_thinking_block_is_refused() -> None:
    with serving(*loop_script({"type": "thinking", "thinking": "Sum them with code"})) as (
        _,
        provider,
    ):
        first = provider.complete(thinking_request())
        block = first.content[0]
        assert isinstance(block, ThinkingBlock)
        edited = Message(
            role="assistant",
            content=[block.model_copy(update={"thinking": "Sum them by hand"}), *first.tool_uses],
        )
        with pytest.raises(ModelError) as caught:
            provider.complete(thinking_request(edited, tool_results(first, "42")))
    assert caught.value.failure_class == "MODEL_REQUEST_INVALID"
    assert "messages.1.content.0: Invalid `signature` in `thinking` block" in caught.value.message


def test_only_the_final_assistant_turn_needs_its_thinking() -> None:
    # As the API: thinking of earlier turns may be left out, and without thinking on nothing
    # is required at all.
    earlier = ToolUseBlock(id="toolu_early", name="run_python", input={"code": "1"})
    last = ToolUseBlock(id="toolu_last", name="run_python", input={"code": "2"})
    signed = ThinkingBlock(thinking="again", signature=thinking_signature("again"))
    turns = [
        Message(role="assistant", content=[earlier]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_early", content="1")]),
        Message(role="assistant", content=[signed, last]),
        Message(role="user", content=[ToolResultBlock(tool_use_id="toolu_last", content="2")]),
    ]
    unthought = make_request(
        messages=[Message(role="user", content=[TextBlock(text="go")]), *turns[:2]],
        tools=[RUN_PYTHON],
    )
    with serving(text_reply("done"), text_reply("done too")) as (server, provider):
        assert provider.complete(thinking_request(*turns)).text == "done"
        assert provider.complete(unthought).text == "done too"
    assert server.requests[0]["messages"][3]["content"][0] == {
        "type": "thinking",
        "thinking": "again",
        "signature": thinking_signature("again"),
    }


def test_a_thinking_block_without_its_signature_is_refused_by_the_server() -> None:
    import json
    import urllib.error
    import urllib.request

    body = {
        "model": "claude-sonnet-4-6",
        "max_tokens": 4096,
        "thinking": {"type": "enabled", "budget_tokens": 1024},
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": [{"type": "thinking", "thinking": "hm"}]},
            {"role": "user", "content": "more"},
        ],
    }
    with MessagesServer(Script.from_data({"responses": [text_reply("never")]})) as server:
        post = urllib.request.Request(
            f"{server.base_url}/v1/messages",
            data=json.dumps(body).encode(),
            headers={"content-type": "application/json"},
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(post, timeout=5)
        with caught.value as response:
            answer = json.loads(response.read())
    assert caught.value.code == 400
    assert answer["error"] == {
        "type": "invalid_request_error",
        "message": "messages.1.content.0.signature: Field required",
    }
