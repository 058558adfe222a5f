"""Stage 1: an unknown or unsupported intent refuses instead of guessing."""

import pytest

from compiler.context import ContextError, compile_context
from compiler.context.intent import classify_intent
from tests.compiler.context.build import draft, pack, request, run_ctx, staged


def test_known_intent_is_the_catalog_row():
    d = draft(pack(), run_ctx(), request(intent_id="forge.execute.small"))
    row = staged(d, classify_intent).intent
    assert (row.intent_id, row.intent_class, row.task_id, row.consumer) == (
        "forge.execute.small",
        "code_act",
        "step.execute.small",
        "executor",
    )


@pytest.mark.parametrize("intent_id", ["forge.plan", "forge.execute.", "FORGE.EXECUTE", "forge"])
def test_unknown_intent_refuses_naming_intent_pack_and_known_intents(intent_id):
    with pytest.raises(ContextError) as err:
        compile_context(pack(), run_ctx(), request(intent_id=intent_id))
    assert err.value.code == "CONTEXT_UNKNOWN_INTENT"
    text = str(err.value)
    assert repr(intent_id) in text
    assert "test.pack@1.0.0" in text
    assert "forge.execute, forge.execute.small" in text


def test_refusal_happens_before_any_retriever_is_asked():
    calls = []

    def retriever(query):
        calls.append(query)
        return []

    with pytest.raises(ContextError):
        compile_context(pack(), run_ctx(), request(intent_id="nope"), evidence=retriever)
    assert calls == []
