"""The one catalogue of Forge's failure codes: what each means, whether a retry helps, what to do.

A code's value is the Temporal failure `type` Forge writes (persisted in workflow histories and
named in retry policies), so values never change. Three values predate the catalogue and keep
the class names recorded histories and retry policies already hold: `CompilerError`,
`ConflictError`, `MissingCauseError`. Every other value is the member's UPPER_SNAKE name.

`retryable` is the default: a step's contract (its repair policy's retryable_failure_classes)
decides for step failures, and a caller may say so explicitly for one error.
Compiler diagnostics (E_*) and imprinting's template reasons are the two other sections of this
catalogue (schemas.diagnostic_codes): each is one problem inside a failure, never a failure type.
"""

from enum import StrEnum
from typing import Any, Literal, NamedTuple

Category = Literal[
    "plan",
    "recipe",
    "capsule",
    "context",
    "model",
    "step",
    "sandbox",
    "tool",
    "run",
    "store",
    "access",
    "config",
]


class ErrorCode(StrEnum):
    """Every failure code Forge raises; schemas.error_catalogue says what each means."""

    # plan: compiling an objective into a frozen plan
    COMPILER_ERROR = "CompilerError"
    PACK_INVALID = "PACK_INVALID"
    TEMPLATE_INVALID = "TEMPLATE_INVALID"
    PLAN_FILE_INVALID = "PLAN_FILE_INVALID"
    PLAN_REJECTED = "PLAN_REJECTED"
    PLANNER_UNAVAILABLE = "PLANNER_UNAVAILABLE"
    POINTER_INVALID = "POINTER_INVALID"
    SIMILARITY_BACKEND = "SIMILARITY_BACKEND"
    # recipe
    RECIPE_INVALID = "RECIPE_INVALID"
    RECIPE_AUTHOR_REFUSED = "RECIPE_AUTHOR_REFUSED"
    RECIPE_IMPORT_REFUSED = "RECIPE_IMPORT_REFUSED"
    RECIPE_NOT_FOUND = "RECIPE_NOT_FOUND"
    RECURSION_GUARD = "RECURSION_GUARD"
    SUB_RECIPE_FAILED = "SUB_RECIPE_FAILED"
    # capsule: extracting, storing, moving and running capsules
    CAPSULE_NOT_FOUND = "CAPSULE_NOT_FOUND"
    CAPSULE_REFUSED = "CAPSULE_REFUSED"
    CAPSULE_TAMPERED = "CAPSULE_TAMPERED"
    PARAMETER_INVALID = "PARAMETER_INVALID"
    INPUT_LOCATION_REFUSED = "INPUT_LOCATION_REFUSED"
    SCHEDULE_INVALID = "SCHEDULE_INVALID"
    SCHEDULE_NOT_FOUND = "SCHEDULE_NOT_FOUND"
    # context: compiling a model call's context pack
    CONTEXT_UNKNOWN_INTENT = "CONTEXT_UNKNOWN_INTENT"
    CONTEXT_BAD_SPLIT = "CONTEXT_BAD_SPLIT"
    CONTEXT_POLICY_RULE = "CONTEXT_POLICY_RULE"
    CONTEXT_PACK_INVALID = "CONTEXT_PACK_INVALID"
    # model: a provider call (schemas.models.ModelFailureClass)
    MODEL_RATE_LIMITED = "MODEL_RATE_LIMITED"
    MODEL_OVERLOADED = "MODEL_OVERLOADED"
    MODEL_SERVER_ERROR = "MODEL_SERVER_ERROR"
    MODEL_TIMEOUT = "MODEL_TIMEOUT"
    MODEL_CONNECTION = "MODEL_CONNECTION"
    MODEL_BAD_RESPONSE = "MODEL_BAD_RESPONSE"
    MODEL_REQUEST_INVALID = "MODEL_REQUEST_INVALID"
    MODEL_AUTH = "MODEL_AUTH"
    MODEL_UNAVAILABLE = "MODEL_UNAVAILABLE"
    MODEL_SCRIPT_INVALID = "MODEL_SCRIPT_INVALID"
    MODEL_SCRIPT_UNMATCHED = "MODEL_SCRIPT_UNMATCHED"
    PROMPT_NOT_FOUND = "PROMPT_NOT_FOUND"
    MODEL_LEDGER_REPLAY = "MODEL_LEDGER_REPLAY"
    # step: one attempt of a step (schemas.typesystem.FailureClass and the runtime's own)
    SANDBOX_SESSION_DEAD = "SANDBOX_SESSION_DEAD"
    SANDBOX_TRANSPORT_5XX = "SANDBOX_TRANSPORT_5XX"
    READINESS_PROBE = "READINESS_PROBE"
    STALE_CONTINUATION = "STALE_CONTINUATION"
    SANDBOX_OOM = "SANDBOX_OOM"
    SANDBOX_TIMEOUT = "SANDBOX_TIMEOUT"
    OUTPUT_SHAPE = "OUTPUT_SHAPE"
    CODE_ERROR = "CODE_ERROR"
    POLICY_BLOCKED = "POLICY_BLOCKED"
    MISSING_INPUT = "MISSING_INPUT"
    CONTRACT_VIOLATION = "CONTRACT_VIOLATION"
    MAX_RETRIES_REACHED = "MAX_RETRIES_REACHED"
    BUDGET_EXHAUSTED = "BUDGET_EXHAUSTED"
    LEDGER_CORRUPT = "LEDGER_CORRUPT"
    EXECUTOR_UNAVAILABLE = "EXECUTOR_UNAVAILABLE"
    EVALUATION_FAILED = "EVALUATION_FAILED"
    EVALUATION_INVALID = "EVALUATION_INVALID"
    SKILL_OUTPUT_INVALID = "SKILL_OUTPUT_INVALID"
    ERROR = "ERROR"
    # sandbox: the isolation a step runs in
    SANDBOX_UNAVAILABLE = "SANDBOX_UNAVAILABLE"
    SANDBOX_BUSY = "SANDBOX_BUSY"
    WORKSPACE_VIOLATION = "WORKSPACE_VIOLATION"
    NOT_REGULAR_FILE = "NOT_REGULAR_FILE"
    SKILL_DENIED = "SKILL_DENIED"
    # tool: a tool-bridge call from step code (recorded in tool.called.v1, seen by the step)
    UNKNOWN_TOOL = "UNKNOWN_TOOL"
    TOOL_NOT_ALLOWED = "TOOL_NOT_ALLOWED"
    TOOL_CRASHED = "TOOL_CRASHED"
    RESULT_TOO_LARGE = "RESULT_TOO_LARGE"
    BAD_ARGS = "BAD_ARGS"
    BAD_ARGUMENTS = "BAD_ARGUMENTS"
    EGRESS_BLOCKED = "EGRESS_BLOCKED"
    HTTP_ERROR = "HTTP_ERROR"
    HTTP_TIMEOUT = "HTTP_TIMEOUT"
    EVALUATOR_UNAVAILABLE = "EVALUATOR_UNAVAILABLE"
    BRIDGE_OVERLOADED = "BRIDGE_OVERLOADED"
    BRIDGE_BUSY = "BRIDGE_BUSY"
    BRIDGE_FAULT = "BRIDGE_FAULT"
    BAD_REQUEST = "BAD_REQUEST"
    BRIDGE_PROTOCOL = "BRIDGE_PROTOCOL"
    BRIDGE_TIMEOUT = "BRIDGE_TIMEOUT"
    BRIDGE_UNAVAILABLE = "BRIDGE_UNAVAILABLE"
    BRIDGE_ERROR = "BRIDGE_ERROR"
    # run: decisions and requests sent to a running run
    GATE_REJECTED = "GATE_REJECTED"
    GATE_CHANGES_REQUESTED = "GATE_CHANGES_REQUESTED"
    DECISION_REFUSED = "DECISION_REFUSED"
    RUN_ENDED = "RUN_ENDED"
    WORKER_UNAVAILABLE = "WORKER_UNAVAILABLE"
    EXTENSION_REFUSED = "EXTENSION_REFUSED"
    INVALID_INPUT = "INVALID_INPUT"
    # store: the event, artifact and skill stores
    STORE_ERROR = "STORE_ERROR"
    STORE_CONCURRENCY = "STORE_CONCURRENCY"
    STORE_CONFLICT = "ConflictError"
    MISSING_CAUSE = "MissingCauseError"
    EVENT_UNCATALOGUED = "EVENT_UNCATALOGUED"
    SCHEMA_NOT_MIGRATED = "SCHEMA_NOT_MIGRATED"
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND"
    ARTIFACT_CORRUPT = "ARTIFACT_CORRUPT"
    ARTIFACT_TOO_LARGE = "ARTIFACT_TOO_LARGE"
    UNSAFE_SOURCE = "UNSAFE_SOURCE"
    SKILL_PACKAGE_REFUSED = "SKILL_PACKAGE_REFUSED"
    SKILL_NOT_REGISTERED = "SKILL_NOT_REGISTERED"
    SKILL_INTEGRITY = "SKILL_INTEGRITY"
    # access: tenants, API keys, roles and requests to the HTTP API
    UNAUTHENTICATED = "UNAUTHENTICATED"
    FORBIDDEN = "FORBIDDEN"
    NOT_FOUND = "NOT_FOUND"
    TENANT_INVALID = "TENANT_INVALID"
    TENANT_MISMATCH = "TENANT_MISMATCH"
    QUOTA_EXCEEDED = "QUOTA_EXCEEDED"
    IDEMPOTENCY_MISMATCH = "IDEMPOTENCY_MISMATCH"
    IDEMPOTENCY_IN_PROGRESS = "IDEMPOTENCY_IN_PROGRESS"
    REQUEST_INVALID = "REQUEST_INVALID"
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE"
    WEBHOOK_INVALID = "WEBHOOK_INVALID"
    WEBHOOK_REFUSED = "WEBHOOK_REFUSED"
    WEBHOOK_UNAVAILABLE = "WEBHOOK_UNAVAILABLE"
    # config: the worker's and the CLI's own setup
    SETTINGS_INVALID = "SETTINGS_INVALID"
    DEV_SERVER = "DEV_SERVER"
    DEPLOYMENT_REFUSED = "DEPLOYMENT_REFUSED"
    TEMPORAL_UNREACHABLE = "TEMPORAL_UNREACHABLE"
    USAGE_INVALID = "USAGE_INVALID"
    FILE_UNUSABLE = "FILE_UNUSABLE"


class CodeInfo(NamedTuple):
    """One catalogue entry: whether a retry can help, the area, what it means, what to do.

    `api_hint`: what to do, for a caller of the HTTP API, where `hint` names a CLI flag or verb
    the caller has no way to pass (None: `hint` reads the same for both).
    """

    retryable: bool
    category: Category
    meaning: str
    hint: str
    api_hint: str | None = None


def parse_code(value: str) -> ErrorCode:
    """The code a recorded failure type names.

    A type Forge never wrote (an exception class a bug let through) reads as ERROR.
    """
    try:
        return ErrorCode(value)
    except ValueError:
        return ErrorCode.ERROR


def recorded_code(value: Any) -> Any:
    """A recorded failure type as its code (schemas.run.RecordedCode's validator); else as is."""
    return parse_code(value) if isinstance(value, str) else value
