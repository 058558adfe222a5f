"""ContextError: a context compile that cannot go on, with a code and what to do about it."""

from collections.abc import Sequence


class ContextError(Exception):
    """Permanent: the pack, the run context or the request is wrong; retrying will not help.

    `code` is stable (CONTEXT_UNKNOWN_INTENT, CONTEXT_BAD_SPLIT, CONTEXT_POLICY_RULE,
    CONTEXT_PACK_INVALID); `problems` holds one line per problem (what, where, what to do).
    """

    def __init__(self, code: str, problems: str | Sequence[str]) -> None:
        self.code = code
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        if len(self.problems) == 1:
            text = f"{code}: {self.problems[0]}"
        else:
            text = f"{code}: {len(self.problems)} problems:\n" + "\n".join(
                f"  {p}" for p in self.problems
            )
        super().__init__(text)
