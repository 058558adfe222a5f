"""Forge's own metric instruments, and the functions the places they happen record them with.

The instruments come from activities/telemetry.py's meter: with no provider installed
(FORGE_METRICS_PORT unset, telemetry off) they are the API's no-ops. Labels are bounded (tenant,
model, outcome, failure class, never a run or step id) and every label value passes the guard's
masking first, so a credential that reached one shows as its mask, never itself. Workflow code
never records here: these are called from activities and worker services.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping

from opentelemetry.util.types import AttributeValue

from activities.telemetry import FAILURE_CLASS, TENANT, meter
from compiler.ladder.secrets.mask import mask_text

__all__ = [
    "CATALOGUE",
    "enable",
    "enabled",
    "MODEL",
    "OUTCOME",
    "gate_decided",
    "guard_findings",
    "model_called",
    "quota_refused",
    "sandbox_started",
    "step_attempt",
    "webhook_attempt",
]

# Metric label names beside activities/telemetry.py's forge.tenant and forge.failure_class.
MODEL = "forge.model"
OUTCOME = "forge.outcome"
_DIRECTION = "forge.token.direction"
_QUOTA = "forge.quota"
_SOURCE = "forge.guard.sink"

_meter = meter()
_steps = _meter.create_counter(
    "forge.steps", unit="{attempt}", description="Step attempts by outcome and failure class"
)
_step_duration = _meter.create_histogram(
    "forge.step.duration", unit="s", description="Wall time of one step attempt"
)
_sandbox_start = _meter.create_histogram(
    "forge.sandbox.start.duration",
    unit="s",
    description="From launching a sandbox to its step process running",
)
_tokens = _meter.create_counter(
    "forge.model.tokens", unit="{token}", description="Model tokens by tenant, model, direction"
)
_cost = _meter.create_counter(
    "forge.model.cost", unit="USD", description="Priced model cost by tenant and model"
)
_gate_wait = _meter.create_histogram(
    "forge.gate.wait", unit="s", description="From a gate opening to its decision"
)
_quota_refusals = _meter.create_counter(
    "forge.quota.refusals", unit="{refusal}", description="Submissions refused at a quota"
)
_webhook_attempts = _meter.create_counter(
    "forge.webhook.delivery.attempts", unit="{attempt}", description="Webhook delivery attempts"
)
_guard_findings = _meter.create_counter(
    "forge.guard.findings", unit="{finding}", description="Credentials the guard masked"
)

# Every instrument, as docs/observability.md lists it (kept true by a test).
CATALOGUE: tuple[str, ...] = (
    "forge.steps",
    "forge.step.duration",
    "forge.sandbox.start.duration",
    "forge.model.tokens",
    "forge.model.cost",
    "forge.gate.wait",
    "forge.quota.refusals",
    "forge.webhook.delivery.attempts",
    "forge.guard.findings",
)


_enabled = False


def enable() -> None:
    """Record from now on: the process installed a MeterProvider (workers/telemetry/metrics.py).

    Until then every function here returns at once: no masking, no instrument call, no read.
    """
    global _enabled
    _enabled = True


def enabled() -> bool:
    """Whether this process records Forge's metrics."""
    return _enabled


@functools.lru_cache(maxsize=4096)
def _masked(value: str) -> str:
    # Label values are few (bounded): each is masked once, then found in the cache.
    return mask_text(value)[0]


def _labels(values: Mapping[str, str | None]) -> dict[str, AttributeValue]:
    # Masked one by one: a label is short, and a credential in one must not survive whole.
    return {key: _masked(value) for key, value in values.items() if value is not None}


def step_attempt(tenant: str, outcome: str, failure_class: str | None, seconds: float) -> None:
    """One step attempt ended: `completed` or `failed` (with its failure class)."""
    if not _enabled:
        return
    labels = _labels({TENANT: tenant, OUTCOME: outcome, FAILURE_CLASS: failure_class})
    _steps.add(1, labels)
    _step_duration.record(seconds, _labels({TENANT: tenant, OUTCOME: outcome}))


def sandbox_started(seconds: float) -> None:
    """A sandbox's step process reported itself running `seconds` after the launch."""
    if not _enabled:
        return
    _sandbox_start.record(seconds)


def model_called(
    tenant: str, model: str, input_tokens: int, output_tokens: int, cost_usd: float | None
) -> None:
    """A model call was answered: its tokens, and its cost when priced."""
    if not _enabled:
        return
    for direction, tokens in (("input", input_tokens), ("output", output_tokens)):
        _tokens.add(tokens, _labels({TENANT: tenant, MODEL: model, _DIRECTION: direction}))
    if cost_usd:
        _cost.add(cost_usd, _labels({TENANT: tenant, MODEL: model}))


def gate_decided(tenant: str, outcome: str, seconds: float) -> None:
    """A gate was decided (`outcome`: approve, reject, ...) `seconds` after it opened."""
    if not _enabled:
        return
    _gate_wait.record(max(seconds, 0.0), _labels({TENANT: tenant, OUTCOME: outcome}))


def quota_refused(tenant: str, quota: str) -> None:
    """A submission of `tenant` was refused at `quota`."""
    if not _enabled:
        return
    _quota_refusals.add(1, _labels({TENANT: tenant, _QUOTA: quota}))


def webhook_attempt(outcome: str) -> None:
    """One webhook delivery attempt: `delivered`, or the error code it failed with."""
    if not _enabled:
        return
    _webhook_attempts.add(1, _labels({OUTCOME: outcome}))


def guard_findings(sink: str, count: int) -> None:
    """The guard masked `count` credentials in text bound for `sink` (log, event, ...)."""
    if not _enabled:
        return
    if count:
        _guard_findings.add(count, _labels({_SOURCE: sink}))
