"""Model scripts: matching, uses, validation, and the scripted provider that answers from them."""

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from activities.models.anthropic import AnthropicProvider
from activities.models.base import ModelError
from activities.models.script import Script, ScriptUnmatched, prompt_hash, thinking_signature
from activities.models.scripted import ScriptedProvider
from compiler.hashing import canonical_json
from schemas.error_codes import ErrorCode
from schemas.models import (
    Message,
    ModelRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolResultBlock,
    ToolUseBlock,
)
from tests.support.errors import raises_code
from tests.support.messages_server import MessagesServer


def make_request(*texts: str, **fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": "anthropic:claude-sonnet-4-6",
        "consumer": "executor",
        "system": "system prompt about invoices",
        "messages": [
            Message(role="user" if i % 2 == 0 else "assistant", content=[TextBlock(text=t)])
            for i, t in enumerate(texts or ("hello",))
        ],
        "max_tokens": 100,
    }
    values.update(fields)
    return ModelRequest(**values)


def text(value: str, **when: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {"response": {"content": [{"type": "text", "text": value}]}}
    if when:
        entry["when"] = when
    return entry


def script(*entries: dict[str, Any]) -> Script:
    return Script.from_data({"responses": list(entries)})


def said(s: Script, request: ModelRequest) -> str:
    answer = s.answer(request)
    return "".join(getattr(b, "text", "") for b in answer.content)


# ---- matching ---------------------------------------------------------------------------------


def test_entries_are_tried_in_order() -> None:
    s = script(text("first"), text("second"))
    assert said(s, make_request()) == "first"
    assert said(s, make_request()) == "second"
    with pytest.raises(ScriptUnmatched):
        s.answer(make_request())


def test_times_counts_uses_and_zero_is_unlimited() -> None:
    s = Script.from_data(
        {"responses": [{**text("twice"), "times": 2}, {**text("always"), "times": 0}]}
    )
    assert [said(s, make_request()) for _ in range(5)] == [
        "twice",
        "twice",
        "always",
        "always",
        "always",
    ]
    assert s.remaining() == [0, None]


def test_contains_searches_system_text_and_tool_results() -> None:
    s = script(text("by system", contains="invoices"))
    assert said(s, make_request()) == "by system"
    s = script(text("by tool result", contains="exit code 3"), text("fallback"))
    tool_turns = make_request(
        messages=[
            Message(role="user", content=[TextBlock(text="run it")]),
            Message(role="assistant", content=[ToolUseBlock(id="t1", name="run", input={})]),
            Message(
                role="user", content=[ToolResultBlock(tool_use_id="t1", content="exit code 3")]
            ),
        ]
    )
    assert said(s, tool_turns) == "by tool result"
    assert said(s, make_request("unrelated")) == "fallback"


def test_last_contains_looks_at_the_last_message_only() -> None:
    s = script(text("matched last", last_contains="needle"), text("fallback", contains="needle"))
    assert said(s, make_request("needle early", "reply", "plain end")) == "fallback"
    assert said(s, make_request("plain start", "reply", "the needle")) == "matched last"


def test_consumer_model_and_prompt_hash_conditions() -> None:
    target = make_request("exact")
    s = script(
        text("planner", consumer="planner"),
        text("opus", model="anthropic:claude-opus-4-6"),
        text("by hash", prompt_hash=prompt_hash(target)),
        {**text("rest"), "times": 0},
    )
    assert said(s, make_request(consumer="planner")) == "planner"
    assert said(s, make_request(model="anthropic:claude-opus-4-6")) == "opus"
    assert said(s, make_request("other")) == "rest"
    assert said(s, target) == "by hash"


def test_all_conditions_of_one_entry_must_hold() -> None:
    s = script(text("both", consumer="planner", contains="invoices"), text("fallback"))
    assert said(s, make_request(consumer="resolver")) == "fallback"
    assert said(s, make_request(consumer="planner")) == "both"


def test_prompt_hash_is_sha256_of_canonical_request_json() -> None:
    import hashlib

    request = make_request("x")
    expected = hashlib.sha256(canonical_json(request.model_dump(mode="json"))).hexdigest()
    assert prompt_hash(request) == f"sha256:{expected}"
    assert prompt_hash(make_request("y")) != prompt_hash(request)


def test_unmatched_request_names_consumer_and_last_message() -> None:
    s = script(text("only for planner", consumer="planner"), text("once", contains="zzz"))
    long_last = "please " + "x" * 400
    with pytest.raises(ScriptUnmatched) as caught:
        s.answer(make_request(long_last, consumer="evaluator"))
    message = str(caught.value)
    assert "evaluator call to anthropic:claude-sonnet-4-6" in message
    assert ("please " + "x" * 193) in message
    assert "x" * 201 not in message
    assert "<script data>" in message
    assert "times" in message


def test_unmatched_message_says_when_matching_entries_are_used_up() -> None:
    s = script(text("once"))
    s.answer(make_request())
    with pytest.raises(ScriptUnmatched, match="1 matching entries are used up"):
        s.answer(make_request())


# ---- answers ------------------------------------------------------------------------------------


def test_tool_use_ids_are_generated_deterministically() -> None:
    data = {
        "responses": [
            {
                "times": 0,
                "response": {"content": [{"type": "tool_use", "name": "run", "input": {"a": 1}}]},
            }
        ]
    }
    one, two = Script.from_data(data), Script.from_data(data)
    first = one.answer(make_request()).content[0]
    assert first == two.answer(make_request()).content[0]
    assert getattr(first, "id", "").startswith("toolu_")
    second_use = one.answer(make_request()).content[0]
    assert getattr(second_use, "id", None) != getattr(first, "id", None)


def test_stop_reason_defaults_follow_the_content() -> None:
    s = script(
        text("plain"),
        {"response": {"content": [{"type": "tool_use", "name": "t"}]}},
        {"response": {"content": [{"type": "text", "text": "cut"}], "stop_reason": "max_tokens"}},
    )
    assert [s.answer(make_request()).stop_reason for _ in range(3)] == [
        "end_turn",
        "tool_use",
        "max_tokens",
    ]


def test_usage_is_taken_from_the_script_or_approximated() -> None:
    given = {"input_tokens": 7, "output_tokens": 9, "cache_read_input_tokens": 11}
    s = script(
        {"response": {"content": [{"type": "text", "text": "ok"}], "usage": given}},
        text("abcdefgh" * 10),
    )
    usage = s.answer(make_request()).usage
    assert (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens) == (7, 9, 11)
    assert usage.cache_creation_tokens == 0
    request = make_request("hello")
    approx = s.answer(request).usage
    assert approx.input_tokens == len("system prompt about invoices\nhello") // 4 + 1
    assert approx.output_tokens == 80 // 4 + 1


def test_thinking_blocks_keep_their_signature_or_get_a_deterministic_one() -> None:
    data = {
        "responses": [
            {
                "times": 0,
                "response": {
                    "content": [
                        {"type": "thinking", "thinking": "first idea"},
                        {"type": "thinking", "thinking": "second", "signature": "sig-given"},
                        {"type": "redacted_thinking"},
                        {"type": "redacted_thinking", "data": "opaque-bytes"},
                    ]
                },
            }
        ]
    }
    one, two = Script.from_data(data), Script.from_data(data)
    answer = one.answer(make_request())
    assert answer.content == two.answer(make_request("another request")).content
    assert answer.content == one.answer(make_request()).content
    dumped = [b.model_dump() for b in answer.content]
    assert dumped == [
        {
            "type": "thinking",
            "thinking": "first idea",
            "signature": thinking_signature("first idea"),
        },
        {"type": "thinking", "thinking": "second", "signature": "sig-given"},
        {"type": "redacted_thinking", "data": "scripted-redacted"},
        {"type": "redacted_thinking", "data": "opaque-bytes"},
    ]
    assert thinking_signature("first idea") != thinking_signature("first idea.")
    # thinking is billed as output, like the API bills it
    assert answer.usage.output_tokens == len("first idea" + "second") // 4 + 1
    response = ScriptedProvider(one).complete(make_request())
    assert response.content == [
        ThinkingBlock(thinking="first idea", signature=thinking_signature("first idea")),
        ThinkingBlock(thinking="second", signature="sig-given"),
        RedactedThinkingBlock(data="scripted-redacted"),
        RedactedThinkingBlock(data="opaque-bytes"),
    ]
    assert response.text == "" and response.tool_uses == []


def test_answering_is_thread_safe() -> None:
    s = Script.from_data({"responses": [{**text("x"), "times": 100}]})
    answered: list[int] = []
    lock = threading.Lock()

    def worker() -> None:
        for _ in range(25):
            try:
                s.answer(make_request())
            except ScriptUnmatched:
                continue
            with lock:
                answered.append(1)

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(answered) == 100
    assert s.remaining() == [0]


# ---- loading and validation ---------------------------------------------------------------------


def test_load_yaml_and_json_files(tmp_path: Path) -> None:
    yaml_file = tmp_path / "script.yaml"
    yaml_file.write_text(
        "responses:\n"
        "  - when: {consumer: planner}\n"
        "    response:\n"
        "      content:\n"
        "        - {type: text, text: from yaml}\n",
        encoding="utf-8",
    )
    json_file = tmp_path / "script.json"
    json_file.write_text(json.dumps({"responses": [text("from json")]}), encoding="utf-8")
    assert said(Script.load(yaml_file), make_request(consumer="planner")) == "from yaml"
    loaded = Script.load(json_file)
    assert loaded.source == str(json_file)
    assert said(loaded, make_request()) == "from json"


def test_bad_entry_is_named_with_file_and_index(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "responses:\n"
        "  - response: {content: [{type: text, text: fine}]}\n"
        "  - response: {content: [{type: text}]}\n",
        encoding="utf-8",
    )
    with raises_code(ErrorCode.MODEL_SCRIPT_INVALID) as caught:
        Script.load(path)
    message = str(caught.value)
    assert str(path) in message
    assert "entry 1 (response.content.0.text)" in message
    assert "Field required" in message


@pytest.mark.parametrize(
    ("entry", "problem"),
    [
        ({}, "exactly one of `response` or `error`"),
        (
            {"response": {"content": []}, "error": {"status": 500}},
            "exactly one of `response` or `error`",
        ),
        ({"error": {"message": "no status"}}, "status (e.g. 429, 500, 529) or malformed"),
        ({"error": {"status": 429, "malformed": True}}, "not both"),
        ({"error": {"status": 200}}, "greater than or equal to 400"),
        ({**text("x"), "times": -1}, "entry 0 (times)"),
        ({**text("x"), "when": {"consumer": "janitor"}}, "entry 0 (when.consumer)"),
        ({**text("x"), "when": {"prompt_hash": "abc"}}, "entry 0 (when.prompt_hash)"),
        ({**text("x"), "colour": "red"}, "entry 0 (colour)"),
    ],
)
def test_invalid_entries_are_refused_with_a_reason(entry: dict[str, Any], problem: str) -> None:
    with raises_code(ErrorCode.MODEL_SCRIPT_INVALID) as caught:
        Script.from_data({"responses": [entry]}, source="inline.yaml")
    assert "model script inline.yaml" in str(caught.value)
    assert problem in str(caught.value)


def test_unreadable_script_files(tmp_path: Path) -> None:
    with raises_code(
        ErrorCode.MODEL_SCRIPT_INVALID, match="does not exist: point FORGE_MODEL_SCRIPT"
    ):
        Script.load(tmp_path / "missing.yaml")
    broken = tmp_path / "broken.yaml"
    broken.write_text("responses: [\n  - {", encoding="utf-8")
    with raises_code(
        ErrorCode.MODEL_SCRIPT_INVALID, match=r"broken.yaml: invalid YAML at line \d+"
    ):
        Script.load(broken)
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"responses": [}', encoding="utf-8")
    with raises_code(ErrorCode.MODEL_SCRIPT_INVALID, match="bad.json: invalid JSON at line 1"):
        Script.load(bad_json)
    listed = tmp_path / "list.yaml"
    listed.write_text("- {response: {content: []}}\n", encoding="utf-8")
    with raises_code(
        ErrorCode.MODEL_SCRIPT_INVALID, match="must be a mapping with a `responses:` list"
    ):
        Script.load(listed)


# ---- the scripted provider ----------------------------------------------------------------------


def test_scripted_provider_answers_text_tool_use_and_thinking() -> None:
    provider = ScriptedProvider(
        script(
            {
                "response": {
                    "content": [
                        {"type": "thinking", "thinking": "hmm"},
                        {"type": "text", "text": "calling"},
                        {"type": "tool_use", "name": "run", "input": {"cmd": "ls"}},
                    ],
                    "usage": {"input_tokens": 10, "output_tokens": 4},
                }
            }
        )
    )
    response = provider.complete(make_request())
    assert provider.name == "scripted"
    assert response.model == "anthropic:claude-sonnet-4-6"
    assert response.text == "calling"
    assert [b.type for b in response.content] == ["thinking", "text", "tool_use"]
    assert response.content[0] == ThinkingBlock(thinking="hmm", signature=thinking_signature("hmm"))
    assert response.tool_uses[0].input == {"cmd": "ls"}
    assert response.stop_reason == "tool_use"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (10, 4)


@pytest.mark.parametrize(
    ("error", "failure_class"),
    [
        ({"status": 429, "message": "slow down"}, "MODEL_RATE_LIMITED"),
        ({"status": 529}, "MODEL_OVERLOADED"),
        ({"status": 500}, "MODEL_SERVER_ERROR"),
        ({"status": 401}, "MODEL_AUTH"),
        ({"status": 400}, "MODEL_REQUEST_INVALID"),
        ({"malformed": True}, "MODEL_BAD_RESPONSE"),
    ],
)
def test_scripted_errors_map_like_the_anthropic_provider(
    error: dict[str, Any], failure_class: str
) -> None:
    provider = ScriptedProvider(script({"error": error}))
    with pytest.raises(ModelError) as caught:
        provider.complete(make_request())
    assert caught.value.failure_class == failure_class
    assert "entry 0" in caught.value.message
    assert "executor call to anthropic:claude-sonnet-4-6" in caught.value.message


def test_scripted_unknown_stop_reason_is_a_bad_response() -> None:
    provider = ScriptedProvider(script({"response": {"content": [], "stop_reason": "nap"}}))
    with pytest.raises(ModelError) as caught:
        provider.complete(make_request())
    assert caught.value.failure_class == "MODEL_BAD_RESPONSE"
    assert "'nap'" in caught.value.message


def test_scripted_delay_beyond_the_timeout_is_a_timeout() -> None:
    provider = ScriptedProvider(script({**text("late"), "delay_s": 5, "times": 0}))
    with pytest.raises(ModelError) as caught:
        provider.complete(make_request(timeout_s=1))
    assert caught.value.failure_class == "MODEL_TIMEOUT"
    assert provider.complete(make_request(timeout_s=10)).text == "late"


def test_unmatched_scripted_call_is_unavailable_and_not_retried() -> None:
    provider = ScriptedProvider(script(text("planner only", consumer="planner")))
    with pytest.raises(ModelError) as caught:
        provider.complete(make_request("what now?"))
    assert caught.value.failure_class == "MODEL_UNAVAILABLE"
    assert not caught.value.retryable
    assert "what now?" in caught.value.message


def test_one_script_gives_the_same_answers_with_and_without_http() -> None:
    data = {
        "responses": [
            {
                "when": {"consumer": "planner"},
                "response": {
                    "content": [
                        {"type": "thinking", "thinking": "plan it"},
                        {"type": "redacted_thinking", "data": "opaque"},
                        {"type": "text", "text": "plan"},
                        {"type": "tool_use", "name": "write", "input": {"p": 1}},
                    ],
                    "usage": {"input_tokens": 5, "output_tokens": 6, "cache_read_input_tokens": 2},
                },
            },
            {"when": {"last_contains": "second"}, **text("two")},
        ]
    }
    requests = [make_request(consumer="planner"), make_request("the second ask")]
    scripted = ScriptedProvider(Script.from_data(data))
    offline = [scripted.complete(r) for r in requests]
    with MessagesServer(Script.from_data(data)) as server:
        provider = AnthropicProvider("sk-test", base_url=server.base_url)
        try:
            online = [provider.complete(r) for r in requests]
        finally:
            provider.close()
    for a, b in zip(offline, online, strict=True):
        assert (a.content, a.stop_reason, a.usage) == (b.content, b.stop_reason, b.usage)
    assert [b.type for b in online[0].content] == [
        "thinking",
        "redacted_thinking",
        "text",
        "tool_use",
    ]
