"""Conversion of Forge's permanent errors into Temporal ApplicationErrors at the boundary."""

from typing import Any

from temporalio.exceptions import ApplicationError

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
    """A failed step attempt; its class decides whether Temporal may retry it."""
    return ApplicationError(
        message,
        {"attempt": attempt, "failure_class": failure_class, **detail},
        type=failure_class,
        non_retryable=not retryable,
    )


def model_failure(exc: Any) -> ApplicationError:
    """A model call that failed (activities.models.base.ModelError): retryable by its class."""
    return ApplicationError(
        f"model call failed: {exc.message}",
        {"failure_class": exc.failure_class},
        type=exc.failure_class,
        non_retryable=not exc.retryable,
    )
