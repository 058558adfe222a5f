"""The governed tool bridge served to an attempt's step code on meta/bridge.sock."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from activities.harness.attempt import StepAttempt, StepServices
from activities.harness.codeact_session import (
    evaluate_handler,
    evaluate_key_material,
    evaluator_unavailable,
)
from activities.harness.ledger import budget_refusal
from activities.harness.surfacing import surfaced_tool_ids
from activities.sandbox.bridge import BridgeLedger, BridgeServer, ToolHandler
from activities.sandbox.bridge_tools import builtin_handlers
from schemas.context import RunContext

STEP_CODE_BACKENDS = ("sandbox.frozen", "sandbox.session")


@contextmanager
def bridge_session(
    attempt: StepAttempt, services: StepServices, *, before_first_use: Callable[[], None]
) -> Iterator[None]:
    """Serve the bridge for step code: the step's allowed tools the context surfaces.

    The ledger calls `before_first_use` before it first reads or writes the step's stream.
    """
    if attempt.step.backend not in STEP_CODE_BACKENDS:
        yield
        return
    run_context = attempt.run_context()
    allowed = attempt.bridge_tool_ids
    # The context compile decides which allowed tools it surfaces; none allowed, none surfaced.
    surfaced = surfaced_tool_ids(services.packs["executor"], run_context) if allowed else set()
    policy = attempt.bridge_policy([t for t in allowed if t in surfaced])
    ledger = BridgeLedger(
        services.events,
        services.artifacts,
        policy=policy,
        caused_by=attempt.started,
        run_budget_refusal=budget_refusal(services.events, attempt),
        before_first_use=before_first_use,
    )
    with BridgeServer(
        attempt.workspace / "meta" / "bridge.sock",
        policy=policy,
        handlers={
            **builtin_handlers(services.outbound),
            "artifact.evaluate": _evaluate(attempt, services, run_context),
        },
        ledger=ledger,
        key_material={"artifact.evaluate": evaluate_key_material(attempt.workspace)},
    ):
        yield


def _evaluate(attempt: StepAttempt, services: StepServices, run_context: RunContext) -> ToolHandler:
    """artifact.evaluate: the evaluator model when the worker has one and the profile binds it."""
    binding = attempt.profile.executor_by_backend.get("evaluator")
    if services.models is None or binding is None:
        return evaluator_unavailable
    return evaluate_handler(
        services.models.evaluator,
        attempt.workspace,
        binding=binding,
        scope=attempt.call_scope("bridge-eval"),
        run_context=run_context,
    )
