"""What a failed activity or child run says: its application error, message, attempt and usage."""

import asyncio
from typing import Any

from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
)

from schemas.budget import Usage

Failure = ActivityError | ApplicationError | ChildWorkflowError


def app_error(err: Failure) -> ApplicationError | None:
    """The application error behind a failed activity, or a child step's own error."""
    if isinstance(err, ApplicationError):
        return err
    return err.cause if isinstance(err.cause, ApplicationError) else None


def cause_type(err: Failure) -> str | None:
    cause = app_error(err)
    return cause.type if cause is not None else None


def cause_message(err: Failure) -> str:
    cause = app_error(err)
    return str(cause.message if cause is not None else err.cause or err)


def _first_detail(err: Failure) -> dict[str, object]:
    cause = app_error(err)
    if cause is not None and cause.details and isinstance(cause.details[0], dict):
        return cause.details[0]
    return {}


def failure_usage(err: Failure) -> Usage | None:
    """The step's recorded usage, which step__execute puts in its error details."""
    raw = _first_detail(err).get("usage")
    return Usage.model_validate(raw) if isinstance(raw, dict) else None


def attempts(err: Failure) -> int:
    """The failing attempt's number, which step__execute puts first in its error details."""
    attempt = _first_detail(err).get("attempt")
    return attempt if isinstance(attempt, int) else 1


def cancelled(err: BaseException) -> bool:
    """Whether `err` is the run's cancellation (an activity or child it cancelled says so)."""
    if isinstance(err, asyncio.CancelledError):
        return True
    return isinstance(err, ActivityError | ChildWorkflowError) and isinstance(
        err.cause, CancelledError
    )


TOLD_KEYS = frozenset({"code", "hint", "where"})  # activities.errors.to_application_error's


def own_details(cause: ApplicationError) -> list[Any]:
    """The error's own details, without the code-and-hint entry the converter appends.

    What a run records of a failure stays what older workers recorded for the same event id.
    """
    return [
        d
        for d in cause.details
        if not (isinstance(d, dict) and "code" in d and set(d) <= TOLD_KEYS)
    ]
