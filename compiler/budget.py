"""Layered budgets, pure: the usage ledger projection, step projections and the run's caps.

The workflow enforces the run's caps with these functions before every step starts; the step
harness checks a step's tool-call budgets against its own recorded calls; the tool bridge (model
layer) refuses a call over budget with the same functions before dispatching it.
"""

import math
from collections.abc import Iterable, Sequence
from typing import Any, Protocol

from schemas.budget import (
    MODEL_CALLED,
    TOOL_CALLED,
    BudgetExtension,
    BudgetLimits,
    BudgetState,
    ExtendBudgetInput,
    ModelCalled,
    PriceTable,
    StepProjection,
    ToolCalled,
    Usage,
)
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.profile import ExecutionProfile


class LedgerEvent(Protocol):
    @property
    def event_id(self) -> str: ...
    @property
    def type(self) -> str: ...
    @property
    def payload(self) -> dict[str, Any]: ...


class LedgerError(ForgeError, ValueError):
    """A usage event the platform wrote is malformed: accounting cannot be trusted."""

    code = ErrorCode.LEDGER_CORRUPT


def usage_from_events(events: Iterable[LedgerEvent], *, attempt: int | None = None) -> Usage:
    """Sum model.called and tool.called events (of one attempt, if given): deriveUsageTotals."""
    total = Usage()
    for event in events:
        if event.type not in (MODEL_CALLED, TOOL_CALLED):
            continue
        try:
            if event.type == MODEL_CALLED:
                call = ModelCalled.model_validate(event.payload)
                one = Usage(
                    input_tokens=call.input_tokens,
                    output_tokens=call.output_tokens,
                    cache_read_tokens=call.cache_read_tokens,
                    cache_creation_tokens=call.cache_creation_tokens,
                    cost_usd=call.cost_usd,
                    model_calls=1,
                )
                call_attempt = call.attempt
            else:
                tool = ToolCalled.model_validate(event.payload)
                call_attempt = tool.attempt
                one = Usage(tool_calls=1) if tool.channel == "executor" else Usage(bridge_calls=1)
        except ValueError as exc:
            raise LedgerError(f"usage event {event.event_id} is malformed: {exc}") from None
        if attempt is None or call_attempt == attempt:
            total = total.plus(one)
    return total


def cost_of(model: str, usage: Usage, prices: PriceTable) -> float | None:
    """USD for `usage` on `model` from the price table; None when the model has no price."""
    price = prices.models.get(model)
    if price is None:
        return None
    micro = (
        usage.input_tokens * price.input_per_mtok
        + usage.output_tokens * price.output_per_mtok
        + usage.cache_read_tokens * price.cache_read_per_mtok
        + usage.cache_creation_tokens * price.cache_write_per_mtok
    )
    return round(micro / 1_000_000, 9)


def project_step(
    backend: str, tool_budget: int, profile: ExecutionProfile, prices: PriceTable
) -> StepProjection:
    """The most a step's own model calls may produce: calls x the binding's max_tokens.

    Frozen code makes no executor calls; its governed bridge calls are metered one by one at call
    time against what remains, so they are not projected here.
    """
    if backend == "sandbox.session":
        calls, binding_key = tool_budget, "sandbox.session"
    elif backend == "evaluator":
        calls, binding_key = 1, "evaluator"
    else:
        return StepProjection(basis=f"{backend}: no executor model calls")
    binding = profile.executor_by_backend.get(binding_key)
    if binding is None or binding.runtime_overrides.max_tokens is None or calls == 0:
        return StepProjection(basis=f"{backend}: no max_tokens bound, nothing to project")
    per_call = binding.runtime_overrides.max_tokens
    tokens = calls * per_call
    model = binding.model_binding_ref
    cost = cost_of(model, Usage(output_tokens=tokens), prices)
    basis = f"{calls} call(s) x {per_call} max output tokens on {model}"
    if cost is None:
        basis += " (no price for this model: cost not projected)"
    return StepProjection(tokens=tokens, cost_usd=cost, basis=basis)


def exhaustion(state: BudgetState) -> str | None:
    """Why recorded spend has reached a cap, or None while there is room."""
    lim, spent = state.limits, state.spent
    if lim.max_tokens is not None and spent.tokens >= lim.max_tokens:
        return f"recorded usage {spent.tokens:,} tokens reached the run's cap of {lim.max_tokens:,}"
    if lim.max_cost_usd is not None and round(spent.cost_usd, 9) >= lim.max_cost_usd:
        return (
            f"recorded cost ${spent.cost_usd:,.4f} reached the run's cap of "
            f"${lim.max_cost_usd:,.2f}"
        )
    return None


def start_refusal(
    state: BudgetState,
    step_key: str,
    projection: StepProjection,
    *,
    reserved: Sequence[StepProjection] = (),
) -> str | None:
    """Why `step_key` may not start now (caps reached, or its projection exceeds what remains).

    `reserved` are the projections of steps already in flight: what they may still spend is not
    available to a new step.
    """
    spent_out = exhaustion(state)
    if spent_out is not None:
        return spent_out
    lim, spent = state.limits, state.spent
    held_tokens = sum(p.tokens for p in reserved)
    held_cost = sum(p.cost_usd or 0.0 for p in reserved)
    held = f" ({held_tokens:,} reserved by steps in flight)" if held_tokens else ""
    if lim.max_tokens is not None:
        left = lim.max_tokens - spent.tokens - held_tokens
        if projection.tokens > left:
            return (
                f"step {step_key} projects {projection.tokens:,} tokens ({projection.basis}) but "
                f"only {max(left, 0):,} of the run's {lim.max_tokens:,} remain{held}"
            )
    cost, cap = projection.cost_usd, lim.max_cost_usd
    # Rounded to the nano-dollar: an exact fit is allowed, as it is for tokens.
    if cap is not None and cost is not None and round(spent.cost_usd + held_cost + cost, 9) > cap:
        left_usd = max(cap - spent.cost_usd - held_cost, 0.0)
        return (
            f"step {step_key} projects ${cost:,.4f} ({projection.basis}) but only "
            f"${left_usd:,.4f} of the run's ${cap:,.2f} remain"
            + (f" (${held_cost:,.4f} reserved by steps in flight)" if held_cost else "")
        )
    return None


def extension_refusal(state: BudgetState, inp: ExtendBudgetInput, finished: bool) -> str | None:
    """Why an extension cannot apply; None when it can. A refused extension changes nothing."""
    if finished:
        return "the run has finished; there is no budget left to extend"
    if not inp.reason.strip():
        return "an extension needs a reason (it is recorded with the actor)"
    if isinstance(inp.tokens, bool) or inp.tokens < 0:
        return f"tokens must be a whole number of 0 or more, not {inp.tokens!r}"
    if not math.isfinite(inp.cost_usd) or inp.cost_usd < 0:
        return f"cost must be a finite amount of USD of 0 or more, not {inp.cost_usd!r}"
    if inp.tokens == 0 and inp.cost_usd == 0:
        return "nothing to extend: give tokens, cost or both (more than 0)"
    if inp.tokens and state.limits.max_tokens is None:
        return "the run has no token cap; there is nothing to extend (leave tokens at 0)"
    if inp.cost_usd and state.limits.max_cost_usd is None:
        return "the run has no cost cap; there is nothing to extend (leave cost at 0)"
    return None


def extended(state: BudgetState, ext: BudgetExtension) -> BudgetState:
    """The state after an accepted extension: caps raised, the extension recorded."""
    lim = state.limits
    cap = lim.max_cost_usd
    limits = BudgetLimits(
        max_tokens=None if lim.max_tokens is None else lim.max_tokens + ext.tokens,
        max_cost_usd=None if cap is None else round(cap + ext.cost_usd, 9),
    )
    return state.model_copy(update={"limits": limits, "extensions": [*state.extensions, ext]})


def step_overrun(usage: Usage, *, tool_budget: int, bridge_call_budget: int) -> str | None:
    """Why one attempt's recorded tool calls broke its contract's budgets, or None."""
    if usage.tool_calls > tool_budget:
        return (
            f"the attempt dispatched {usage.tool_calls} tool calls; its contract allows "
            f"{tool_budget}"
        )
    if usage.bridge_calls > bridge_call_budget:
        return (
            f"the attempt made {usage.bridge_calls} bridge calls; its contract allows "
            f"{bridge_call_budget}"
        )
    return None


def remaining(state: BudgetState) -> BudgetLimits | None:
    """The caps a child run (a `uses:` sub-recipe) gets: what its parent has left, or None."""
    lim, spent = state.limits, state.spent
    if lim.max_tokens is None and lim.max_cost_usd is None:
        return None
    return BudgetLimits(
        max_tokens=None if lim.max_tokens is None else max(1, lim.max_tokens - spent.tokens),
        max_cost_usd=(
            None
            if lim.max_cost_usd is None
            else max(1e-9, round(lim.max_cost_usd - spent.cost_usd, 9))
        ),
    )


def left_for_step(
    state: BudgetState, reserved: Sequence[StepProjection] = ()
) -> BudgetLimits | None:
    """What a starting step may spend at most: the caps minus recorded spend minus `reserved`.

    The step's executor and tool bridge refuse a further model call once its own recorded spend
    reaches this; None means the run has no cap.
    """
    lim, spent = state.limits, state.spent
    if lim.max_tokens is None and lim.max_cost_usd is None:
        return None
    held_tokens = sum(p.tokens for p in reserved)
    held_cost = sum(p.cost_usd or 0.0 for p in reserved)
    return BudgetLimits(
        max_tokens=(
            None if lim.max_tokens is None else max(1, lim.max_tokens - spent.tokens - held_tokens)
        ),
        max_cost_usd=(
            None
            if lim.max_cost_usd is None
            else max(1e-9, round(lim.max_cost_usd - spent.cost_usd - held_cost, 9))
        ),
    )


def step_budget_refusal(left: BudgetLimits | None, used: Usage) -> str | None:
    """Why a step that has recorded `used` this attempt may not make another model call."""
    if left is None:
        return None
    if left.max_tokens is not None and used.tokens >= left.max_tokens:
        return (
            f"the step has used {used.tokens:,} tokens, all the run had left for it "
            f"({left.max_tokens:,}); extend the run's budget to go on"
        )
    if left.max_cost_usd is not None and round(used.cost_usd, 9) >= left.max_cost_usd:
        return (
            f"the step has spent ${used.cost_usd:,.4f}, all the run had left for it "
            f"(${left.max_cost_usd:,.4f}); extend the run's budget to go on"
        )
    return None
