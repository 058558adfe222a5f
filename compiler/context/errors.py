"""ContextError: a context compile that cannot go on, with a code and what to do about it."""

from collections.abc import Sequence

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError


class ContextError(ForgeError):
    """Permanent: the pack, the run context or the request is wrong; retrying will not help.

    `code` is stable (CONTEXT_UNKNOWN_INTENT, CONTEXT_BAD_SPLIT, CONTEXT_POLICY_RULE,
    CONTEXT_PACK_INVALID); `problems` holds one line per problem (what, where, what to do).
    """

    message_is_complete = True  # each problem line says what, where and what to do
    __str__ = ForgeError.line  # `CODE: message`, as before the catalogue

    def __init__(self, code: ErrorCode, problems: str | Sequence[str]) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            text = self.problems[0]
        else:
            text = f"{len(self.problems)} problems:\n" + "\n".join(f"  {p}" for p in self.problems)
        super().__init__(text, code=ErrorCode(code))
