"""The one provider protocol every model backend implements, and the error it raises."""

from typing import Protocol

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.models import ModelRequest, ModelResponse


class ModelError(ForgeError):
    """A provider call that did not produce a usable response.

    failure_class says what went wrong (a MODEL_* code); retryable follows from the catalogue.
    The message names the model and what to do.
    """

    message_is_complete = True  # the provider's message names the model and what to do

    def __init__(self, failure_class: ErrorCode, message: str) -> None:
        super().__init__(message, code=ErrorCode(failure_class))
        self.failure_class = self.code


class Provider(Protocol):
    """A model backend. Implementations do not retry: Temporal owns every retry in Forge."""

    @property
    def name(self) -> str: ...

    @property
    def billed(self) -> bool:
        """Whether its answers cost money (priced from the price table); a script's do not."""
        ...

    def complete(self, request: ModelRequest) -> ModelResponse:
        """Answer one request, or raise ModelError."""
        ...
