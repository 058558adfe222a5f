"""The one provider protocol every model backend implements, and the error it raises."""

from typing import Protocol

from schemas.models import RETRYABLE_MODEL_FAILURES, ModelFailureClass, ModelRequest, ModelResponse


class ModelError(Exception):
    """A provider call that did not produce a usable response.

    failure_class says what went wrong (schemas.models.ModelFailureClass); retryable follows
    from it. The message names the model and what to do.
    """

    def __init__(self, failure_class: ModelFailureClass, message: str) -> None:
        super().__init__(message)
        self.failure_class: ModelFailureClass = failure_class
        self.message = message

    @property
    def retryable(self) -> bool:
        return self.failure_class in RETRYABLE_MODEL_FAILURES


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
