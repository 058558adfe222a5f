"""Retry policies and timeouts as named constants (Temporal owns every retry in Forge)."""

import hashlib
from datetime import timedelta

from temporalio.common import (
    Priority,
    RetryPolicy,
    SearchAttributeKey,
    SearchAttributePair,
    TypedSearchAttributes,
)

from schemas.error_codes import ErrorCode as C

# Every workflow Forge starts carries its tenant as a search attribute, so Temporal's own
# tools (the UI, `temporal workflow list --query 'ForgeTenant="acme"'`) can scope by it.
TENANT_ATTRIBUTE = SearchAttributeKey.for_keyword("ForgeTenant")


def tenant_attributes(tenant: str) -> TypedSearchAttributes:
    """The search attributes of a workflow acting for `tenant`."""
    return TypedSearchAttributes([SearchAttributePair(TENANT_ATTRIBUTE, tenant)])


# Temporal refuses a fairness key over 64 bytes; a scope id may be 128 characters.
_FAIRNESS_KEY_MAX = 64


def tenant_priority(tenant: str) -> Priority:
    """The task-queue priority of a workflow acting for `tenant`: its fairness key.

    Matching dispatches a backlog round-robin across fairness keys, so a tenant that floods
    the queue waits behind itself, not others (docs/deployment.md, "Fairness" says what the
    cluster must enable). Activities and child workflows inherit it from their workflow, so
    only the places that start a workflow from outside one set it.
    """
    if len(tenant) <= _FAIRNESS_KEY_MAX:  # scope ids are ASCII: characters are bytes
        return Priority(fairness_key=tenant)
    digest = hashlib.sha256(tenant.encode()).hexdigest()[:8]
    return Priority(fairness_key=f"{tenant[: _FAIRNESS_KEY_MAX - 9]}~{digest}")


# Error types raised by activities for failures that a retry cannot fix.
COMPILER_ERROR = C.COMPILER_ERROR.value
# A run started from an objective that no recipe matches clearly needs the planner model.
PLANNER_UNAVAILABLE = C.PLANNER_UNAVAILABLE.value
NON_RETRYABLE_STEP_ERRORS = tuple(
    c.value
    for c in (
        C.CODE_ERROR,
        C.CONTRACT_VIOLATION,
        C.MISSING_INPUT,
        C.POLICY_BLOCKED,
        C.EXECUTOR_UNAVAILABLE,
        C.MAX_RETRIES_REACHED,
    )
)

COMPILE_TIMEOUT = timedelta(minutes=2)  # one pass
# The front end's activities (recipes__match, compile__plan, compile__passes) beat every second
# (activities/cancellation.py): a cancelled run reaches them within one heartbeat.
FRONT_END_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
COMPILE_PASSES_TIMEOUT = timedelta(minutes=8)  # every pass, two of them with a model call
COMPILE_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=3,
    non_retryable_error_types=[COMPILER_ERROR],
)

# Pass A with a model: one planner call and at most MAX_REPAIRS repair calls, each up to the
# binding's timeout; transient provider failures are retried, a rejected plan is not.
PLAN_TIMEOUT = timedelta(minutes=15)
PLAN_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=2),
    maximum_interval=timedelta(seconds=30),
    maximum_attempts=4,
    non_retryable_error_types=[COMPILER_ERROR, C.PLAN_REJECTED.value, PLANNER_UNAVAILABLE],
)

EVENTS_TIMEOUT = timedelta(seconds=30)
EVENTS_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=10),
    maximum_attempts=20,
    non_retryable_error_types=[C.STORE_CONFLICT.value, C.MISSING_CAUSE.value],
)

STEP_HEARTBEAT_TIMEOUT = timedelta(seconds=10)
# The sandbox enforces the contract's wall clock; the activity gets a margin for the harness.
STEP_HARNESS_MARGIN = timedelta(minutes=2)
STEP_RETRY_INITIAL = timedelta(seconds=1)
STEP_RETRY_MAXIMUM = timedelta(seconds=30)

FINALIZE_TIMEOUT = timedelta(minutes=5)

# Webhook deliveries: one POST per attempt (its own 10 s deadline inside), backing off from 1 s
# to a minute; a refusal (4xx, an address egress refuses) is final, anything else is retried.
WEBHOOK_SEND_TIMEOUT = timedelta(seconds=30)
NON_RETRYABLE_WEBHOOK_ERRORS = (C.WEBHOOK_REFUSED.value, C.EGRESS_BLOCKED.value)


def webhook_retry(max_attempts: int) -> RetryPolicy:
    """How a delivery is retried: at most `max_attempts` attempts in all (a new policy)."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=1),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=60),
        maximum_attempts=max_attempts,
        non_retryable_error_types=list(NON_RETRYABLE_WEBHOOK_ERRORS),
    )


# Long runs continue as new past this many history events unless the run says otherwise.
DEFAULT_HISTORY_THRESHOLD = 10_000


def step_retry(max_attempts: int) -> RetryPolicy:
    """The contract's repair policy as a Temporal retry policy (a new policy, never mutated)."""
    return RetryPolicy(
        initial_interval=STEP_RETRY_INITIAL,
        maximum_interval=STEP_RETRY_MAXIMUM,
        maximum_attempts=max_attempts,
        non_retryable_error_types=list(NON_RETRYABLE_STEP_ERRORS),
    )
