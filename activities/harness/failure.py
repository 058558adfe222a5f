"""StepFailure: how a harness step fails an attempt, classified by the failure model."""

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError


class StepFailure(ForgeError):
    """A failed attempt, classified by the failure model of seed 000 §6.5 / Part X-c."""

    message_is_complete = True  # the step's own report; its contract says what to do
    __str__ = ForgeError.line  # `CODE: message`, as before the catalogue

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code
