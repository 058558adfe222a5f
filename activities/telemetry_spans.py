"""The spans Forge records inside the work: a sandboxed process, a model call, a bridge tool call.

Names and attributes are listed in docs/observability.md ("Span catalogue"). Model and tool spans
follow the OpenTelemetry GenAI semantic conventions; no prompt, response, argument or result
text is ever recorded. Any attribute that could hold text (an error message, a tool name sent by
step code) passes the guard's masking first (`safe_text`).

With no tracer provider installed (telemetry off) every span here is the API's no-op one and
the attribute work is skipped (`is_recording()` is false), so the hot paths pay one call.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from activities.telemetry import ATTEMPT, FAILURE_CLASS, RUN_ID, STEP_ID, TENANT, tracer
from compiler.ladder.secrets.mask import clip

if TYPE_CHECKING:
    from activities.sandbox.runner import SandboxResult
    from schemas.models import CallScope, ModelResponse

__all__ = [
    "ATTR_TEXT_LIMIT",
    "SANDBOX_SPAN",
    "model_span",
    "safe_text",
    "sandbox_span",
    "step_ids",
    "tool_outcome",
    "tool_span",
]

# The longest text attribute a span carries (masked first, then cut: compiler's `clip`).
ATTR_TEXT_LIMIT = 256
SANDBOX_SPAN = "sandbox.run"

# OpenTelemetry GenAI semantic conventions (gen-ai-spans.md, gen-ai attribute registry).
GEN_AI_OPERATION = "gen_ai.operation.name"
GEN_AI_PROVIDER = "gen_ai.provider.name"
GEN_AI_REQUEST_MODEL = "gen_ai.request.model"
GEN_AI_RESPONSE_MODEL = "gen_ai.response.model"
GEN_AI_FINISH_REASONS = "gen_ai.response.finish_reasons"
GEN_AI_INPUT_TOKENS = "gen_ai.usage.input_tokens"
GEN_AI_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
GEN_AI_CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
GEN_AI_CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"
GEN_AI_TOOL_NAME = "gen_ai.tool.name"
ERROR_TYPE = "error.type"

# Forge's own attributes of the spans here.
SANDBOX_EXIT_CODE = "forge.sandbox.exit_code"
SANDBOX_CPU_S = "forge.sandbox.cpu_s"
SANDBOX_PEAK_RSS = "forge.sandbox.peak_rss_bytes"
SANDBOX_TIMED_OUT = "forge.sandbox.timed_out"
SANDBOX_KILLED_BY = "forge.sandbox.killed_by"
SANDBOX_ISOLATION = "forge.sandbox.isolation"
TOOL_OUTCOME = "forge.tool.outcome"
MODEL_CONSUMER = "forge.model.consumer"


# The forge.* attributes of the step attempt running in this context (set by run_attempt), for
# spans whose code does not know them (the sandbox runner).
_STEP_IDS: ContextVar[Mapping[str, str | int] | None] = ContextVar("forge_step_ids", default=None)


@contextmanager
def step_ids(tenant: str, run_id: str, step_id: str, attempt: int) -> Iterator[None]:
    """Within: spans that know no ids of their own carry this step attempt's."""
    # Masked when a span records them (sandbox_span), so telemetry off does no masking here.
    token = _STEP_IDS.set({TENANT: tenant, RUN_ID: run_id, STEP_ID: step_id, ATTEMPT: attempt})
    try:
        yield
    finally:
        _STEP_IDS.reset(token)


def safe_text(text: str) -> str:
    """`text` with every credential masked, then cut to ATTR_TEXT_LIMIT: fit for a span."""
    return clip(text, ATTR_TEXT_LIMIT)[0]


def _ids(
    tenant: str | None, run_id: str | None, step_id: str | None
) -> dict[str, str | int | float | bool]:
    attrs: dict[str, str | int | float | bool] = {}
    for key, value in ((TENANT, tenant), (RUN_ID, run_id), (STEP_ID, step_id)):
        if value:
            attrs[key] = safe_text(value)
    return attrs


@contextmanager
def sandbox_span(ids: Mapping[str, str] | None) -> Iterator[Span]:
    """The span of one sandboxed process; `ids` are the caller's forge.* attributes.

    Without `ids`, the step attempt's (step_ids) when one is running in this context.
    """
    with tracer().start_as_current_span(
        SANDBOX_SPAN, record_exception=False, set_status_on_exception=False
    ) as span:
        if span.is_recording():
            if ids:
                span.set_attributes({key: safe_text(value) for key, value in ids.items()})
            elif (bound := _STEP_IDS.get()) is not None:
                span.set_attributes(
                    {k: safe_text(v) if isinstance(v, str) else v for k, v in bound.items()}
                )
        try:
            yield span
        except Exception as exc:
            # The sandbox could not run (unavailable, busy): its error code, never its text.
            code = getattr(exc, "code", None)
            note_failure(span, str(code) if code else type(exc).__name__, "sandbox not run")
            raise


def note_sandbox(span: Span, result: SandboxResult, cpu_s: float, peak_rss_bytes: int) -> None:
    """What the sandboxed process did, on its span (nothing when the span does not record)."""
    if not span.is_recording():
        return
    span.set_attributes(
        {
            SANDBOX_TIMED_OUT: result.timed_out,
            SANDBOX_CPU_S: cpu_s,
            SANDBOX_ISOLATION: result.isolation,
        }
    )
    if peak_rss_bytes:
        span.set_attribute(SANDBOX_PEAK_RSS, peak_rss_bytes)
    if result.exit_code is not None:
        span.set_attribute(SANDBOX_EXIT_CODE, result.exit_code)
    if result.killed_by is not None:
        span.set_attribute(SANDBOX_KILLED_BY, result.killed_by)
    if result.killed_by is not None or result.exit_code != 0:
        span.set_status(Status(StatusCode.ERROR))


@contextmanager
def model_span(model: str, provider: str, consumer: str, scope: CallScope) -> Iterator[Span]:
    """The span of one model call ("chat <model>", GenAI conventions); no prompt text."""
    # Named in full (masked) only once it is known to record: with no provider, no masking.
    with tracer().start_as_current_span(
        "chat", kind=SpanKind.CLIENT, record_exception=False, set_status_on_exception=False
    ) as span:
        if span.is_recording():
            span.update_name(safe_text(f"chat {model}"))
            span.set_attributes(
                {
                    GEN_AI_OPERATION: "chat",
                    GEN_AI_PROVIDER: safe_text(provider),
                    GEN_AI_REQUEST_MODEL: safe_text(model),
                    MODEL_CONSUMER: safe_text(consumer),
                    ATTEMPT: scope.attempt,
                    **_ids(scope.scope.tenant, scope.run_id, scope.step_key),
                }
            )
        yield span


def note_model_response(span: Span, response: ModelResponse) -> None:
    """The response's model, token usage and finish reason, on the call's span."""
    if not span.is_recording():
        return
    usage = response.usage
    span.set_attributes(
        {
            GEN_AI_RESPONSE_MODEL: safe_text(response.model),
            # The conventions count cached input in input_tokens; Anthropic reports it apart.
            GEN_AI_INPUT_TOKENS: usage.input_tokens
            + usage.cache_read_tokens
            + usage.cache_creation_tokens,
            GEN_AI_OUTPUT_TOKENS: usage.output_tokens,
            GEN_AI_CACHE_READ: usage.cache_read_tokens,
            GEN_AI_CACHE_CREATION: usage.cache_creation_tokens,
            GEN_AI_FINISH_REASONS: [response.stop_reason],
        }
    )


def note_failure(span: Span, failure_class: str, message: str) -> None:
    """A failed call: error.type and forge.failure_class, the message masked and cut."""
    if not span.is_recording():
        return
    span.set_attributes({ERROR_TYPE: failure_class, FAILURE_CLASS: failure_class})
    span.set_status(Status(StatusCode.ERROR, safe_text(message)))


@contextmanager
def tool_span(
    tool: str,
    tenant: str | None,
    run_id: str | None,
    step_id: str | None,
    attempt: int,
    *,
    parent: Context | None = None,
) -> Iterator[Span]:
    """The span of one bridge tool call ("execute_tool <tool>"); no arguments or results.

    `parent`: the context the call belongs to (a bridge serves calls on its own threads).
    """
    with tracer().start_as_current_span(
        "execute_tool",
        context=parent,
        kind=SpanKind.INTERNAL,
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        if span.is_recording():
            name = safe_text(tool)  # step code chose it: masked before any processor sees it
            span.update_name(f"execute_tool {name}")
            span.set_attributes(
                {
                    GEN_AI_OPERATION: "execute_tool",
                    GEN_AI_TOOL_NAME: name,
                    ATTEMPT: attempt,
                    **_ids(tenant, run_id, step_id),
                }
            )
        try:
            yield span
        except Exception as exc:
            # A platform fault on this call (the bridge reports BRIDGE_FAULT and logs it).
            tool_outcome("fault", type(exc).__name__)
            raise


def tool_outcome(outcome: str, failure_class: str | None = None) -> None:
    """How the current tool call ended: ok, error, refused, replayed, overloaded, fault."""
    span = trace.get_current_span()
    if not span.is_recording():
        return
    span.set_attribute(TOOL_OUTCOME, outcome)
    if failure_class is not None:
        span.set_attributes({ERROR_TYPE: failure_class, FAILURE_CLASS: failure_class})
        span.set_status(Status(StatusCode.ERROR))
