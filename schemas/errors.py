"""ForgeError: the one root of every error Forge raises, with its code, where and what to do.

Its code is a catalogue member (schemas.error_codes); retryable and the hint default from the
catalogue. At the Temporal boundary one function turns it into an ApplicationError
(activities.errors.to_application_error); the CLI prints its line() and exits 2.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Self

from schemas.error_catalogue import CATALOGUE
from schemas.error_codes import ErrorCode
from schemas.spelling import Spelled, Surface

__all__ = ["ErrorCode", "ForgeError", "RunFailure", "Where"]


@dataclass(frozen=True)
class Where:
    """Where the problem is: any of a file (and line), a step, a field and a parameter."""

    file: str | None = None
    line: int | None = None
    step: str | None = None
    field: str | None = None
    parameter: str | None = None

    def __str__(self) -> str:
        parts = []
        if self.file:
            parts.append(f"{self.file}:{self.line}" if self.line is not None else self.file)
        if self.step:
            parts.append(f"step {self.step}")
        if self.field:
            parts.append(f"field {self.field}")
        if self.parameter:
            parts.append(f"parameter {self.parameter}")
        return ", ".join(parts)

    def __bool__(self) -> bool:
        return bool(str(self))


class ForgeError(Exception):
    """A failure Forge names: a catalogue code, whether a retry can help, where, what to do.

    Most raises are `ForgeError(message, code=ErrorCode.X)`: a subclass exists only for callers
    that catch it by name or for data it carries (tests/schemas/test_error_catalogue.py checks);
    it sets `code` as its default and a raise may name another (`code=`). `details` are
    plain-data values that lead the ApplicationError's details at the Temporal boundary.
    `line()` is `CODE: message (where) — hint`; `str()` is the message, as for any exception.
    """

    code: ErrorCode = ErrorCode.ERROR

    # The message already says where and what to do (an older, richer format): line() adds only
    # the code. Subclasses whose messages predate the catalogue set this.
    message_is_complete: ClassVar[bool] = False
    # Set by spell(): message and hint as templates naming request fields, so that each surface
    # words them its own way (schemas/spelling.py). None: they read the same everywhere.
    spelled: tuple[Spelled, Spelled | None] | None = None

    def __init__(
        self,
        message: str = "",
        *,
        code: ErrorCode | None = None,
        where: Where | str | None = None,
        hint: str | None = None,
        retryable: bool | None = None,
        details: Sequence[Any] = (),
    ) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        entry = CATALOGUE[self.code]
        self.message = message
        self.where = where
        self.hint = hint if hint is not None else entry.hint
        self.retryable = retryable if retryable is not None else entry.retryable
        self.details = list(details)

    def spell(self, message: Spelled, hint: Spelled | None = None) -> Self:
        """Word the message (and hint) by the fields they name: the CLI's words by default."""
        self.message = message.render("cli")
        self.args = (self.message,)
        if hint is not None:
            self.hint = hint.render("cli")
        self.spelled = (message, hint)
        return self

    def worded(self, surface: Surface) -> tuple[str, str]:
        """(message, hint) as `surface` names fields: a shared error quotes no flag in the API."""
        default = self.hint
        entry = CATALOGUE[self.code]
        if surface == "api" and self.hint == entry.hint and entry.api_hint is not None:
            default = entry.api_hint  # the catalogue's hint names a CLI flag: the API's own
        if self.spelled is None:
            return self.message, default
        message, hint = self.spelled
        return message.render(surface), hint.render(surface) if hint else default

    def __str__(self) -> str:
        # The message alone: callers compose it into their own sentences and problem lists
        # (as they did before the catalogue); line() is the form a person reads on its own.
        return self.message

    def line(self) -> str:
        """`CODE: message (where) — hint`: one line unless the message spans several."""
        # The code's name: three codes keep an older class name as the value Temporal records.
        text = f"{self.code.name}: {self.message}" if self.message else self.code.name
        if self.message_is_complete:
            return text
        if self.where:
            text += f" ({self.where})"
        # A message that already ends "see `forge schedule list`" gets no second "See …" hint.
        if self.hint and self.hint.rstrip(".").casefold() not in self.message.casefold():
            text += f" — {self.hint}"
        return text


class RunFailure(ForgeError):
    """A failure the run workflow decides on purpose: it fails the run at once.

    A rejected plan, no planner, a refused decision. Any other error in workflow code fails
    only its task, which Temporal retries, so a redeployed worker can still finish the run.
    """
