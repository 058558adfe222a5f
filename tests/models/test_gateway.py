"""The model gateway on a real SQLite event store and local artifact store, over real HTTP."""

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from activities.compile.typelib import load_prices
from activities.models.anthropic import AnthropicProvider
from activities.models.base import ModelError, Provider
from activities.models.config import providers_from_env
from activities.models.gateway import MODEL_FAILED, ModelGateway, model_event_id
from activities.models.script import Script, prompt_hash
from activities.models.scripted import ScriptedProvider
from activities.store.artifacts import ArtifactStore, open_artifact_store
from activities.store.events import EventStore, open_event_store
from compiler.budget import usage_from_events
from schemas.budget import MODEL_CALLED, ModelCalled
from schemas.error_codes import ErrorCode
from schemas.models import (
    CallScope,
    Message,
    ModelRequest,
    ModelResponse,
    TextBlock,
    ThinkingBlock,
    ToolDef,
    ToolResultBlock,
)
from schemas.scope import Scope
from tests.support.errors import raises_code
from tests.support.messages_server import MessagesServer

OPUS = "anthropic:claude-opus-4-6"
SONNET = "anthropic:claude-sonnet-4-6"
STREAM = "run-1:step:s1"


@dataclass
class Stores:
    events: EventStore
    artifacts: ArtifactStore
    root: Path


@pytest.fixture
def stores(tmp_path: Path) -> Iterator[Stores]:
    events = open_event_store(f"sqlite:///{tmp_path / 'forge.db'}")
    try:
        yield Stores(
            events, open_artifact_store(str(tmp_path / "artifacts")), tmp_path / "artifacts"
        )
    finally:
        events.close()


def make_request(text: str = "Summarize the invoices", **fields: Any) -> ModelRequest:
    values: dict[str, Any] = {
        "model": OPUS,
        "consumer": "executor",
        "system": "You audit bills.",
        "messages": [Message(role="user", content=[TextBlock(text=text)])],
        "max_tokens": 512,
    }
    values.update(fields)
    return ModelRequest(**values)


def make_scope(call_key: str = "exec:turn-1", **fields: Any) -> CallScope:
    values: dict[str, Any] = {
        "scope": Scope.default(),
        "run_id": "run-1",
        "stream_id": STREAM,
        "step_key": "s1",
        "caused_by": "run-1:step.started.v1:s1",
        "call_key": call_key,
    }
    values.update(fields)
    return CallScope(**values)


def gateway(
    stores: Stores, providers: dict[str, Provider], fallback: Provider | None = None
) -> ModelGateway:
    return ModelGateway(
        stores.events, stores.artifacts, load_prices(), providers, fallback=fallback
    )


class Serving:
    def __init__(self, *entries: dict[str, Any]) -> None:
        self.server = MessagesServer(Script.from_data({"responses": list(entries)}))

    def __enter__(self) -> tuple[MessagesServer, AnthropicProvider]:
        self.server.__enter__()
        self.provider = AnthropicProvider("sk-test", base_url=self.server.base_url)
        return self.server, self.provider

    def __exit__(self, *exc: object) -> None:
        self.provider.close()
        self.server.__exit__(None, None, None)


USAGE = {
    "input_tokens": 1000,
    "output_tokens": 200,
    "cache_read_input_tokens": 300,
    "cache_creation_input_tokens": 50,
}


def reply(text: str, **extra: Any) -> dict[str, Any]:
    return {"response": {"content": [{"type": "text", "text": text}], "usage": USAGE}, **extra}


def blobs(root: Path) -> list[Path]:
    return sorted(p for p in (root / "sha256").rglob("*") if p.is_file())


def test_a_call_writes_one_model_called_event_with_usage_cost_and_latency(stores: Stores) -> None:
    request = make_request()
    with Serving(reply("Total: $42", delay_s=0.05)) as (server, provider):
        result = gateway(stores, {"anthropic": provider}).call(request, make_scope())
        assert server.request_count == 1
    assert result.response.text == "Total: $42"
    assert not result.replayed
    digest = prompt_hash(request)
    assert result.prompt_hash == digest
    expected_cost = round((1000 * 5.0 + 200 * 25.0 + 300 * 0.5 + 50 * 6.25) / 1_000_000, 9)
    assert result.cost_usd == pytest.approx(expected_cost)
    assert result.latency_ms >= 50

    (event,) = stores.events.read_stream(STREAM)
    assert event.type == MODEL_CALLED
    assert event.event_id == "run-1:model.called.v1:s1:1:1:exec:turn-1"
    assert result.model_call_id == event.event_id
    assert event.caused_by == "run-1:step.started.v1:s1"
    assert event.prompt_hash == digest
    assert event.run_id == "run-1"
    call = ModelCalled.model_validate(event.payload)
    assert call.model == OPUS
    assert (call.input_tokens, call.output_tokens) == (1000, 200)
    assert (call.cache_read_tokens, call.cache_creation_tokens) == (300, 50)
    assert call.cost_usd == pytest.approx(expected_cost)
    assert call.cost_known
    assert call.latency_ms == result.latency_ms
    assert call.prompt_hash == digest
    assert (call.consumer, call.call_key, call.stop_reason) == (
        "executor",
        "exec:turn-1",
        "end_turn",
    )
    assert (call.step_key, call.attempt, call.iteration) == ("s1", 1, 1)
    assert call.response_ref is not None
    stored = stores.artifacts.read_bytes(Scope.default(), call.response_ref["sha256"], 1 << 20)
    assert ModelResponse.model_validate_json(stored) == result.response

    usage = usage_from_events(stores.events.read_stream(STREAM))
    assert usage.model_calls == 1
    assert usage.tokens == 1550
    assert usage.cost_usd == pytest.approx(expected_cost)


def test_the_prompt_is_stored_once(stores: Stores) -> None:
    request = make_request()
    with Serving(reply("same", times=0)) as (server, provider):
        gw = gateway(stores, {"anthropic": provider})
        first = gw.call(request, make_scope("k1"))
        prompt_blob = stores.root / "sha256" / first.prompt_hash[7:9] / first.prompt_hash[9:]
        before = os.stat(prompt_blob)
        second = gw.call(request, make_scope("k2"))
        assert server.request_count == 2
    assert first.prompt_hash == second.prompt_hash
    after = os.stat(prompt_blob)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # one prompt and one response (the same answer both times), each stored once
    assert len(blobs(stores.root)) == 2
    assert gw.prompts.get(Scope.default(), first.prompt_hash) == request
    assert len(stores.events.read_stream(STREAM)) == 2


def test_a_repeated_call_key_is_replayed_without_a_request_or_an_event(stores: Stores) -> None:
    request = make_request()
    with Serving(reply("once"), reply("twice")) as (server, provider):
        gw = gateway(stores, {"anthropic": provider})
        first = gw.call(request, make_scope())
        again = gw.call(request, make_scope())
        assert server.request_count == 1
    assert again.replayed and not first.replayed
    assert again.response == first.response
    assert again.model_call_id == first.model_call_id
    assert again.cost_usd == first.cost_usd
    assert again.latency_ms == first.latency_ms
    assert len(stores.events.read_stream(STREAM)) == 1


def test_replay_needs_no_provider(stores: Stores) -> None:
    request = make_request()
    with Serving(reply("recorded")) as (_, provider):
        first = gateway(stores, {"anthropic": provider}).call(request, make_scope())
    replayed = gateway(stores, {}).call(request, make_scope())
    assert replayed.replayed
    assert replayed.response.text == "recorded"
    assert replayed.model_call_id == first.model_call_id


def test_a_reused_call_key_with_another_prompt_is_refused_before_calling(stores: Stores) -> None:
    with Serving(reply("a"), reply("b")) as (server, provider):
        gw = gateway(stores, {"anthropic": provider})
        gw.call(make_request("first question"), make_scope())
        with pytest.raises(ModelError) as caught:
            gw.call(make_request("another question"), make_scope())
        assert server.request_count == 1
        # the same key at the next attempt is a new call
        retried = gw.call(make_request("another question"), make_scope(attempt=2))
        assert server.request_count == 2
    assert caught.value.failure_class == "MODEL_REQUEST_INVALID"
    assert "'exec:turn-1'" in caught.value.message
    assert "own call_key" in caught.value.message
    assert retried.model_call_id == "run-1:model.called.v1:s1:1:2:exec:turn-1"
    assert len(stores.events.read_stream(STREAM)) == 2


def test_a_failed_call_writes_model_failed_and_raises(stores: Stores) -> None:
    request = make_request()
    entries = (
        {"error": {"status": 429, "message": "slow down"}},
        {"error": {"status": 529, "message": "overloaded"}},
        reply("finally"),
    )
    with Serving(*entries) as (server, provider):
        gw = gateway(stores, {"anthropic": provider})
        for expected in ("MODEL_RATE_LIMITED", "MODEL_OVERLOADED"):
            with pytest.raises(ModelError) as caught:
                gw.call(request, make_scope())
            assert caught.value.failure_class == expected
        result = gw.call(request, make_scope())
        assert server.request_count == 3
    first, second, called = stores.events.read_stream(STREAM)
    assert [first.type, second.type, called.type] == [MODEL_FAILED, MODEL_FAILED, MODEL_CALLED]
    assert first.event_id == "run-1:model.failed.v1:s1:1:1:exec:turn-1:1"
    assert second.event_id == "run-1:model.failed.v1:s1:1:1:exec:turn-1:2"
    assert first.caused_by == "run-1:step.started.v1:s1"
    assert first.prompt_hash == prompt_hash(request)
    payload = first.payload
    assert payload["failure_class"] == "MODEL_RATE_LIMITED"
    assert payload["retryable"] is True
    assert "slow down" in payload["message"]
    assert (payload["model"], payload["consumer"], payload["call_key"], payload["attempt"]) == (
        OPUS,
        "executor",
        "exec:turn-1",
        1,
    )
    assert result.response.text == "finally"
    # failures cost nothing in the ledger
    assert usage_from_events(stores.events.read_stream(STREAM)).model_calls == 1


def test_an_unpriced_model_is_recorded_with_cost_unknown(stores: Stores) -> None:
    request = make_request(model="anthropic:claude-experimental-9")
    with Serving(reply("ok")) as (_, provider):
        result = gateway(stores, {"anthropic": provider}).call(request, make_scope())
    assert result.cost_usd is None
    call = ModelCalled.model_validate(stores.events.read_stream(STREAM)[0].payload)
    assert call.cost_known is False
    assert call.cost_usd == 0.0
    assert call.input_tokens == 1000


def test_no_provider_is_model_unavailable_and_recorded(stores: Stores) -> None:
    with pytest.raises(ModelError) as caught:
        gateway(stores, {}).call(make_request(), make_scope())
    assert caught.value.failure_class == "MODEL_UNAVAILABLE"
    assert not caught.value.retryable
    assert caught.value.message == (
        f"no model provider for {OPUS}: set ANTHROPIC_API_KEY, or FORGE_MODEL_SCRIPT to a "
        "script file"
    )
    (event,) = stores.events.read_stream(STREAM)
    assert event.type == MODEL_FAILED
    assert event.payload["failure_class"] == "MODEL_UNAVAILABLE"


def test_the_fallback_answers_refs_no_provider_claims(stores: Stores) -> None:
    scripted = ScriptedProvider(
        Script.from_data(
            {
                "responses": [
                    {"times": 0, "response": {"content": [{"type": "text", "text": "scripted"}]}}
                ]
            }
        )
    )
    with Serving(reply("real")) as (server, provider):
        gw = gateway(stores, {"anthropic": provider}, fallback=scripted)
        real = gw.call(make_request(), make_scope("a"))
        other = gw.call(make_request(model="openai:gpt-5"), make_scope("b"))
        assert server.request_count == 1
    assert real.response.text == "real"
    assert other.response.text == "scripted"
    only_scripted = gateway(stores, {}, fallback=scripted).call(make_request(), make_scope("c"))
    assert only_scripted.response.text == "scripted"


def test_a_scripted_answer_costs_nothing_and_every_call_names_its_model_once(
    stores: Stores,
) -> None:
    # Before: the script's answers were priced as Anthropic calls, and the model appeared as
    # the binding ref from a script but as the bare API name from Anthropic.
    usage = {"input_tokens": 1000, "output_tokens": 200}
    entry = {"response": {"content": [{"type": "text", "text": "scripted"}], "usage": usage}}
    scripted = ScriptedProvider(Script.from_data({"responses": [entry]}))
    free = gateway(stores, {}, fallback=scripted).call(make_request(), make_scope("s"))
    assert free.cost_usd == 0.0 and free.usage().input_tokens == 1000
    with Serving(reply("real")) as (_, provider):
        paid = gateway(stores, {"anthropic": provider}).call(make_request(), make_scope("a"))
    assert paid.cost_usd is not None and paid.cost_usd > 0
    calls = {e.payload["call_key"]: e.payload for e in stores.events.read_stream(STREAM)}
    assert calls["s"]["provider"] == "scripted" and calls["s"]["cost_usd"] == 0.0
    assert calls["a"]["provider"] == "anthropic" and calls["a"]["cost_usd"] > 0
    binding = make_request().model
    assert calls["s"]["model"] == calls["a"]["model"] == binding  # one name for one model
    assert calls["a"]["provider_model"] == binding.split(":", 1)[1]  # what Anthropic said


def test_a_scope_without_cause_is_refused_before_calling(stores: Stores) -> None:
    with Serving(reply("never")) as (server, provider):
        with pytest.raises(ValueError, match="has no caused_by: set CallScope.caused_by"):
            gateway(stores, {"anthropic": provider}).call(
                make_request(), make_scope(caused_by=None)
            )
        assert server.request_count == 0
    assert stores.events.read_stream(STREAM) == []


def test_long_event_ids_are_cut_with_a_hash() -> None:
    scope = make_scope("k" * 120, run_id="r" * 60, step_key="s" * 40)
    event_id = model_event_id(MODEL_CALLED, scope)
    assert len(event_id) <= 200
    assert event_id == model_event_id(MODEL_CALLED, scope)
    assert event_id.startswith("r" * 60 + ":model.called.v1:")
    other = model_event_id(MODEL_CALLED, scope.model_copy(update={"call_key": "k" * 119 + "x"}))
    assert other != event_id


def test_long_ids_are_written_to_the_store(stores: Stores) -> None:
    scope = make_scope("k" * 120, run_id="r" * 60, step_key="s" * 40)
    scripted = ScriptedProvider(Script.from_data({"responses": [{"response": {"content": []}}]}))
    result = gateway(stores, {}, fallback=scripted).call(make_request(), scope)
    assert stores.events.read_stream(STREAM)[0].event_id == result.model_call_id


# ---- configuration --------------------------------------------------------------------------


def test_providers_from_env(tmp_path: Path) -> None:
    script_file = tmp_path / "script.yaml"
    script_file.write_text("responses:\n  - response: {content: []}\n", encoding="utf-8")

    providers, fallback = providers_from_env(None, None, None)
    assert (providers, fallback) == ({}, None)

    providers, fallback = providers_from_env("sk-test", None, "http://127.0.0.1:9")
    assert list(providers) == ["anthropic"] and fallback is None
    anthropic = providers["anthropic"]
    assert isinstance(anthropic, AnthropicProvider)
    assert anthropic.base_url == "http://127.0.0.1:9"
    anthropic.close()

    providers, fallback = providers_from_env(None, script_file, None)
    assert providers == {} and isinstance(fallback, ScriptedProvider)

    providers, fallback = providers_from_env("sk-test", script_file, None)
    assert isinstance(providers["anthropic"], AnthropicProvider)
    assert providers["anthropic"].base_url == "https://api.anthropic.com"
    assert isinstance(fallback, ScriptedProvider)
    providers["anthropic"].close()

    with raises_code(ErrorCode.MODEL_SCRIPT_INVALID, match="does not exist"):
        providers_from_env(None, tmp_path / "missing.yaml", None)


def test_a_concurrent_call_with_the_same_key_yields_the_answer_of_record(stores: Stores) -> None:
    def scripted(text: str) -> ScriptedProvider:
        entry = {"response": {"content": [{"type": "text", "text": text}]}}
        return ScriptedProvider(Script.from_data({"responses": [entry]}))

    request, scope = make_request(), make_scope()

    class RacedProvider:
        """Another worker records the same call while this one waits for its answer."""

        name = "raced"
        billed = True

        def complete(self, req: ModelRequest) -> ModelResponse:
            gateway(stores, {}, fallback=scripted("winner")).call(req, scope)
            return scripted("loser").complete(req)

    result = gateway(stores, {}, fallback=RacedProvider()).call(request, scope)
    assert result.response.text == "winner"
    assert result.replayed
    (event,) = stores.events.read_stream(STREAM)
    assert result.model_call_id == event.event_id


def test_a_thinking_tool_loop_is_stored_and_replayed_with_its_thinking(stores: Stores) -> None:
    tool = ToolDef(name="run_python", description="Run Python", input_schema={"type": "object"})
    entries = (
        {
            "when": {"last_contains": "Summarize"},
            "response": {
                "content": [
                    {"type": "thinking", "thinking": "Add them up in code"},
                    {"type": "tool_use", "name": "run_python", "input": {"code": "print(42)"}},
                ]
            },
        },
        {
            "when": {"last_contains": "42"},
            "response": {
                "content": [
                    {"type": "thinking", "thinking": "It printed 42", "signature": "sig-2"},
                    {"type": "text", "text": "Total: $42"},
                ]
            },
        },
    )

    def turn_two(first: ModelResponse) -> ModelRequest:
        results = [ToolResultBlock(tool_use_id=u.id, content="42") for u in first.tool_uses]
        return make_request(
            model=SONNET,
            tools=[tool],
            thinking_budget_tokens=2048,
            messages=[
                *make_request().messages,
                Message(role="assistant", content=list(first.content)),
                Message(role="user", content=list(results)),
            ],
        )

    # Sonnet: the SDK warns on budget thinking with Opus 4.6 (test_anthropic_provider)
    opening = make_request(model=SONNET, tools=[tool], thinking_budget_tokens=2048)
    with Serving(*entries) as (server, provider):
        gw = gateway(stores, {"anthropic": provider})
        first = gw.call(opening, make_scope("exec:1"))
        second_request = turn_two(first.response)
        second = gw.call(second_request, make_scope("exec:2"))
        assert server.request_count == 2
    assert isinstance(first.response.content[0], ThinkingBlock)
    assert second.response.content[0] == ThinkingBlock(thinking="It printed 42", signature="sig-2")
    assert second.response.text == "Total: $42"
    # the thinking is part of the stored prompt, and of its hash
    stored = gw.prompts.get(Scope.default(), second.prompt_hash)
    assert stored == second_request
    assert stored.messages[1].content[0] == first.response.content[0]
    assert second.prompt_hash == prompt_hash(second_request)
    unsigned = turn_two(first.response.model_copy(update={"content": first.response.content[1:]}))
    assert prompt_hash(unsigned) != second.prompt_hash

    # a retried attempt replays both turns, thinking included, without a provider; the loop
    # it rebuilds from the replayed first answer is the same prompt, so it replays too
    offline = gateway(stores, {})
    first_again = offline.call(opening, make_scope("exec:1"))
    assert first_again.replayed and first_again.response == first.response
    second_again = offline.call(turn_two(first_again.response), make_scope("exec:2"))
    assert second_again.replayed
    assert second_again.prompt_hash == second.prompt_hash
    assert second_again.response == second.response
    assert len(stores.events.read_stream(STREAM)) == 2
