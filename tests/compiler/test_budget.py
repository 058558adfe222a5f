"""compiler/budget.py: the usage ledger projection, projections, caps and extensions (pure)."""

from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from activities.compile.typelib import load_prices, load_profiles
from compiler import budget
from compiler.errors import PackError
from schemas.budget import (
    BudgetExtension,
    BudgetLimits,
    BudgetState,
    ExtendBudgetInput,
    PriceTable,
    StepProjection,
    Usage,
)
from schemas.events import Actor

OPS = Actor(id="ana", name="Ana", role="ops", kind="human")


@dataclass
class Ev:
    type: str
    payload: dict[str, Any] = field(default_factory=dict)
    event_id: str = "e1"


def model_call(tokens_in: int, tokens_out: int, cost: float, attempt: int = 1) -> Ev:
    return Ev(
        "model.called.v1",
        {
            "model": "anthropic:claude-sonnet-4-6",
            "attempt": attempt,
            "input_tokens": tokens_in,
            "output_tokens": tokens_out,
            "cache_read_tokens": 5,
            "cost_usd": cost,
        },
    )


def test_usage_sums_the_ledger_and_filters_by_attempt():
    events = [
        Ev("step.started.v1", {"attempt": 1}),
        model_call(100, 20, 0.01),
        model_call(50, 10, 0.02, attempt=2),
        Ev("tool.called.v1", {"tool": "t", "channel": "executor", "attempt": 2}),
        Ev("tool.called.v1", {"tool": "t", "channel": "bridge"}),
    ]
    total = budget.usage_from_events(events)
    assert (total.input_tokens, total.output_tokens, total.cache_read_tokens) == (150, 30, 10)
    assert total.tokens == 190 and total.cost_usd == pytest.approx(0.03)
    assert (total.model_calls, total.tool_calls, total.bridge_calls) == (2, 1, 1)
    second = budget.usage_from_events(events, attempt=2)
    assert (second.tokens, second.tool_calls, second.bridge_calls) == (65, 1, 0)


def test_a_malformed_usage_event_is_refused_by_id():
    bad = Ev("model.called.v1", {"model": "m", "input_tokens": -1}, event_id="r1:model.called")
    with pytest.raises(budget.LedgerError, match="r1:model.called is malformed"):
        budget.usage_from_events([bad])


def test_cost_from_the_price_table():
    prices = load_prices()
    usage = Usage(input_tokens=1_000_000, output_tokens=100_000, cache_read_tokens=1_000_000)
    # Sonnet: $3 in, $15 out, $0.30 cache read, per million tokens.
    assert budget.cost_of("anthropic:claude-sonnet-4-6", usage, prices) == pytest.approx(4.8)
    assert budget.cost_of("acme:unknown", usage, prices) is None


def test_projections_per_backend():
    layers, _ = load_profiles()
    default, prices = layers.builtin["default"], layers.prices
    written = budget.project_step("sandbox.session", 10, default, prices)
    assert written.tokens == 81_920 and written.cost_usd == pytest.approx(81_920 * 25 / 1e6)
    assert written.basis == "10 call(s) x 8192 max output tokens on anthropic:claude-opus-4-6"
    evaluator = budget.project_step("evaluator", 0, default, prices)
    assert evaluator.tokens == 4096
    frozen = budget.project_step("sandbox.frozen", 0, default, prices)
    assert frozen == StepProjection(basis="sandbox.frozen: no executor model calls")
    unpriced = budget.project_step("sandbox.session", 10, default, PriceTable())
    assert unpriced.tokens == 81_920 and unpriced.cost_usd is None
    assert "cost not projected" in unpriced.basis


def state(max_tokens=None, max_cost=None, **spent: Any) -> BudgetState:
    return BudgetState(
        limits=BudgetLimits(max_tokens=max_tokens, max_cost_usd=max_cost), spent=Usage(**spent)
    )


def test_steps_in_flight_reserve_their_projection():
    big = StepProjection(tokens=81_920, cost_usd=None, basis="b")
    assert budget.start_refusal(state(100_000), "s2", big) is None
    refusal = budget.start_refusal(state(100_000), "s2", big, reserved=[big])
    assert "only 18,080 of the run's 100,000 remain (81,920 reserved by steps in flight)" in (
        refusal or ""
    )
    priced = StepProjection(tokens=0, cost_usd=0.2, basis="b")
    # 0.1 + 0.2 is 0.30000000000000004 in floats: an exact fit must still be allowed.
    assert budget.start_refusal(state(max_cost=0.3, cost_usd=0.1), "s", priced) is None
    assert "$0.2000 reserved by steps in flight" in (
        budget.start_refusal(state(max_cost=0.3, cost_usd=0.1), "s", priced, reserved=[priced])
        or ""
    )


def test_start_refusals():
    room = StepProjection(tokens=100, cost_usd=1.0, basis="b")
    assert budget.start_refusal(state(), "s", room) is None  # no caps
    assert budget.start_refusal(state(1000, input_tokens=899), "s", room) is None
    assert "projects 100 tokens (b) but only 99 of the run's 1,000 remain" in (
        budget.start_refusal(state(1000, input_tokens=901), "s", room) or ""
    )
    assert "reached the run's cap of 1,000" in (
        budget.start_refusal(state(1000, input_tokens=1000), "s", StepProjection()) or ""
    )
    assert "projects $1.0000 (b) but only $0.5000" in (
        budget.start_refusal(state(max_cost=2.0, cost_usd=1.5), "s", room) or ""
    )
    unknown_cost = StepProjection(tokens=0, cost_usd=None, basis="b")
    assert budget.start_refusal(state(max_cost=2.0, cost_usd=1.5), "s", unknown_cost) is None
    assert "recorded cost $2.0000 reached" in (
        budget.start_refusal(state(max_cost=2.0, cost_usd=2.0), "s", unknown_cost) or ""
    )


@pytest.mark.parametrize(
    ("tokens", "cost", "reason", "finished", "message"),
    [
        (-1, 0.0, "r", False, "tokens must be a whole number of 0 or more, not -1"),
        (0, -0.5, "r", False, "cost must be a finite amount of USD of 0 or more"),
        (0, float("inf"), "r", False, "cost must be a finite amount"),
        (0, 0.0, "r", False, "nothing to extend"),
        (10, 0.0, "", False, "needs a reason"),
        (10, 0.0, "r", True, "the run has finished"),
        (0, 1.0, "r", False, "the run has no cost cap"),
    ],
)
def test_extension_refusals(tokens, cost, reason, finished, message):
    inp = ExtendBudgetInput(tokens=tokens, cost_usd=cost, actor=OPS, reason=reason)
    assert message in (budget.extension_refusal(state(1000), inp, finished) or "")


def test_an_extension_raises_the_caps_it_names():
    inp = ExtendBudgetInput(tokens=500, actor=OPS, reason="r")
    assert budget.extension_refusal(state(1000, max_cost=1.0), inp, False) is None
    ext = BudgetExtension(
        tokens=500, cost_usd=0.25, actor=OPS, reason="r", extended_at=datetime.now(UTC)
    )
    after = budget.extended(state(1000, max_cost=1.0), ext)
    assert after.limits == BudgetLimits(max_tokens=1500, max_cost_usd=1.25)
    assert after.extensions == [ext]
    no_tokens_cap = budget.extended(state(max_cost=1.0), ext.model_copy(update={"tokens": 0}))
    assert no_tokens_cap.limits.max_tokens is None


def test_step_overrun():
    assert budget.step_overrun(Usage(tool_calls=10), tool_budget=10, bridge_call_budget=0) is None
    assert "11 tool calls; its contract allows 10" in (
        budget.step_overrun(Usage(tool_calls=11), tool_budget=10, bridge_call_budget=0) or ""
    )
    assert "3 bridge calls; its contract allows 2" in (
        budget.step_overrun(Usage(bridge_calls=3), tool_budget=0, bridge_call_budget=2) or ""
    )


def test_a_bad_price_table_names_file_and_field(tmp_path):
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "prices.yaml").write_text(
        "models:\n  acme:m:\n    input_per_mtok: -1\n    output_per_mtok: 2\n"
    )
    with pytest.raises(PackError) as info:
        load_prices([tmp_path])
    [(source, where, message)] = info.value.problems
    assert source.endswith("models/prices.yaml") and where == "models.acme:m.input_per_mtok"
    assert "greater than or equal to 0" in message
