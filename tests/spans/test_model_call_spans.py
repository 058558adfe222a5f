"""A model call's span on failure and on replay: masked error text, no span for a replayed call."""

import pytest

from activities.models.base import ModelError
from tests.models.test_gateway import OPUS, Serving, gateway, make_request, make_scope, reply
from tests.spans.conftest import by_name

STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


def test_a_failed_call_is_an_error_span_whose_message_is_masked(stores, spans):
    failing = {"error": {"status": 400, "message": f"bad key STRIPE_SECRET_KEY={STRIPE} given"}}
    with Serving(failing, reply("finally")) as (_server, provider):
        gw = gateway(stores, {"anthropic": provider})
        with pytest.raises(ModelError) as caught:
            gw.call(make_request(), make_scope())
        gw.call(make_request(), make_scope())  # answered: one span
        gw.call(make_request(), make_scope())  # replayed from the log: no provider, no span
    model = OPUS.split(":", 1)[1]
    failed, answered = by_name(spans, "chat ")
    assert failed.name == answered.name == f"chat {model}"
    attrs = dict(failed.attributes or {})
    assert attrs["error.type"] == attrs["forge.failure_class"] == caught.value.failure_class
    assert not failed.status.is_ok and "[REDACTED:" in (failed.status.description or "")
    assert "gen_ai.usage.input_tokens" not in attrs
    assert dict(answered.attributes or {})["gen_ai.usage.input_tokens"] == 1000 + 300 + 50
    exported = "".join(s.to_json() for s in spans.get_finished_spans())
    assert STRIPE not in exported and "Summarize the invoices" not in exported


def test_the_anthropic_sdks_own_spans_stay_off_whatever_its_variables_say(
    stores, spans, monkeypatch
):
    """The model call's span is Forge's `chat`, masked; the SDK's own tracing is off, so its
    ANTHROPIC_OPEN_TELEMETRY* variables (read by no Settings) cannot add prompt text to a trace."""
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY", "true")
    monkeypatch.setenv("ANTHROPIC_OPEN_TELEMETRY_TRACES_CONTENT_MODE", "content")
    with Serving(reply("the invoices sum to 12")) as (server, provider):
        gateway(stores, {"anthropic": provider}).call(make_request(), make_scope())
    # Nor does the provider get the trace's context.
    (sent,) = server.headers
    assert "traceparent" not in sent
    names = [s.name for s in spans.get_finished_spans()]
    assert names == [f"chat {OPUS.split(':', 1)[1]}"]
    exported = "".join(s.to_json() for s in spans.get_finished_spans())
    assert "Summarize the invoices" not in exported and "sum to 12" not in exported
