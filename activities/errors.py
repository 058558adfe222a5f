"""The one place a ForgeError becomes Temporal's ApplicationError (activities and workflows).

`to_application_error` keeps the failure `type` strings recorded histories and retry policies
hold: the type is the code's value (schemas.error_codes). The failure converter applies it to
every ForgeError that leaves an activity, a workflow or an update validator, so code raises
ForgeErrors and never builds an ApplicationError itself.
"""

from typing import Any

import pydantic
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from activities import masked_output
from compiler.errors import CompilerError
from compiler.ladder.secrets.mask import Masked, mask_text
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

INVALID_INPUT = ErrorCode.INVALID_INPUT.value


def to_application_error(exc: ForgeError, *, benign: bool = False) -> ApplicationError:
    """`exc` as Temporal's failure: type=code, non_retryable=not retryable.

    Details: the error's own details first (readers take the first one: a step's attempt and
    usage, a rejected plan's diagnostics), then one dict with the code, where and the hint.
    BENIGN: a failed step is an outcome the run handles (retry, skip, report), not a fault of
    the worker; the SDK logs it at debug level without a traceback.
    """
    told: dict[str, Any] = {"code": exc.code.value, "hint": exc.hint}
    if exc.where:
        told["where"] = str(exc.where)
    converted = ApplicationError(
        exc.message or exc.code.value,
        *exc.details,
        told,
        type=exc.code.value,
        non_retryable=not exc.retryable,
        category=ApplicationErrorCategory.BENIGN
        if benign
        else ApplicationErrorCategory.UNSPECIFIED,
    )
    converted.__cause__ = exc.__cause__
    return converted.with_traceback(exc.__traceback__)


def compiler_failure(exc: CompilerError) -> ApplicationError:
    """A rejected plan: non-retryable, every diagnostic in the details."""
    return to_application_error(exc)


def step_failure(
    failure_class: ErrorCode, message: str, *, attempt: int, retryable: bool, **detail: Any
) -> ApplicationError:
    """A failed step attempt; its contract decided whether Temporal may retry it (BENIGN)."""
    failed = ForgeError(
        message,
        code=failure_class,
        retryable=retryable,
        details=[{"attempt": attempt, "failure_class": failure_class.value, **detail}],
    )
    return to_application_error(failed, benign=True)


def model_failure(exc: ForgeError) -> ApplicationError:
    """A model call that failed (activities.models.base.ModelError): retryable by its class."""
    failed = ForgeError(
        f"model call failed: {exc.message}",
        code=exc.code,
        retryable=exc.retryable,
        details=[{"failure_class": exc.code.value}],
    )
    return to_application_error(failed)


def validation_message(exc: pydantic.ValidationError) -> str:
    """One line naming each field that is wrong and why; never the submitted value, no URL."""
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'the input'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False)
    ]
    return f"invalid {exc.title}: " + "; ".join(problems)


class ForgeFailureConverter(DefaultFailureConverter):
    """Temporal failures as Forge shows them.

    A ForgeError becomes its ApplicationError (to_application_error). A payload that fails
    validation (an update or signal sent by hand, a corrupt stored document) becomes one clear
    INVALID_INPUT line instead of pydantic's report and its URL.
    """

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        if isinstance(exception, pydantic.ValidationError):
            # Retryable as before (an activity's may be mended by a new worker); the trace kept.
            invalid = ForgeError(validation_message(exception), code=ErrorCode.INVALID_INPUT)
            invalid.__traceback__ = exception.__traceback__
            exception = to_application_error(invalid)
        elif isinstance(exception, ForgeError):
            exception = to_application_error(exception)
        super().to_failure(exception, payload_converter, failure)
        mask_failure(failure)


def mask_failure(failure: Failure) -> None:
    """Mask credentials in a failure as Temporal records it: messages, stack traces, details.

    Every failure an activity or workflow reports reaches the history through here, its causes
    too, so a credential in an exception message is never written down (issue 18). What was
    masked is noted for a guard.output_masked.v1 event (activities/masked_output.py).
    """
    found: list[Masked] = []

    def masked(text: str) -> str:
        new, hits = mask_text(text)
        found.extend(hits)
        return new

    current: Failure | None = failure
    while current is not None:
        current.message = masked(current.message)
        current.stack_trace = masked(current.stack_trace)
        if current.HasField("application_failure_info"):
            for payload in current.application_failure_info.details.payloads:
                text = payload.data.decode("utf-8", errors="replace")
                new = masked(text)
                if new != text:
                    payload.data = new.encode("utf-8")
        current = current.cause if current.HasField("cause") else None
    masked_output.note("failure", None, found)  # recorded as a guard event by the worker
