"""Conversion of Forge's permanent errors into Temporal ApplicationErrors at the boundary."""

from typing import Any

import pydantic
from temporalio.api.failure.v1 import Failure
from temporalio.converter import DefaultFailureConverter, PayloadConverter
from temporalio.exceptions import ApplicationError, ApplicationErrorCategory

from compiler.errors import CompilerError


def compiler_failure(exc: CompilerError) -> ApplicationError:
    """A rejected plan: non-retryable, every diagnostic in the details."""
    return ApplicationError(
        str(exc),
        *[d.model_dump(mode="json") for d in exc.diagnostics],
        type="CompilerError",
        non_retryable=True,
    )


def step_failure(
    failure_class: str, message: str, *, attempt: int, retryable: bool, **detail: Any
) -> ApplicationError:
    """A failed step attempt; its class decides whether Temporal may retry it.

    BENIGN: a step that fails is an outcome the run handles (retry, skip, report), not a fault
    of the worker; the SDK logs it at debug level without a traceback, and the step activity
    logs one line naming the step, the attempt and the class instead.
    """
    return ApplicationError(
        message,
        {"attempt": attempt, "failure_class": failure_class, **detail},
        type=failure_class,
        non_retryable=not retryable,
        category=ApplicationErrorCategory.BENIGN,
    )


def model_failure(exc: Any) -> ApplicationError:
    """A model call that failed (activities.models.base.ModelError): retryable by its class."""
    return ApplicationError(
        f"model call failed: {exc.message}",
        {"failure_class": exc.failure_class},
        type=exc.failure_class,
        non_retryable=not exc.retryable,
    )


INVALID_INPUT = "INVALID_INPUT"


def validation_message(exc: pydantic.ValidationError) -> str:
    """One line naming each field that is wrong and why; never the submitted value, no URL."""
    problems = [
        f"{'.'.join(str(p) for p in e['loc']) or 'the input'}: {e['msg']}"
        for e in exc.errors(include_url=False, include_input=False)
    ]
    return f"invalid {exc.title}: " + "; ".join(problems)


class ForgeFailureConverter(DefaultFailureConverter):
    """Temporal failures as Forge shows them.

    A payload that fails validation (an update or signal sent by hand, a corrupt stored
    document) becomes one clear INVALID_INPUT line instead of pydantic's report and its URL.
    """

    def to_failure(
        self, exception: BaseException, payload_converter: PayloadConverter, failure: Failure
    ) -> None:
        if isinstance(exception, pydantic.ValidationError):
            # Retryable as before (an activity's may be mended by a new worker); the trace kept.
            exception = ApplicationError(
                validation_message(exception), type=INVALID_INPUT
            ).with_traceback(exception.__traceback__)
        super().to_failure(exception, payload_converter, failure)
