"""The compiler's two permanent error types; both carry everything a person needs to act."""

from collections.abc import Sequence

from schemas.diagnostics import Diagnostic
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError


class CompilerError(ForgeError):
    """A plan was rejected. Carries every diagnostic found, not just the first."""

    code = ErrorCode.COMPILER_ERROR
    message_is_complete = True  # one line per diagnostic, each with where and its hint

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        lines = [f"{len(self.diagnostics)} problem(s) in the plan:"]
        for d in self.diagnostics:
            where = "/".join(x for x in (d.step_key, d.slot, d.field) if x) or "plan"
            lines.append(f"  {d.code} at {where}: {d.message} (hint: {d.hint})")
        super().__init__(
            "\n".join(lines), details=[d.model_dump(mode="json") for d in self.diagnostics]
        )


class PackError(ForgeError):
    """A type-library document is invalid: names the source file, the field and the fix."""

    code = ErrorCode.PACK_INVALID
    message_is_complete = True  # one line per problem, each with its file and field

    def __init__(self, problems: Sequence[tuple[str, str, str]]) -> None:
        self.problems = list(problems)
        lines = [f"{len(self.problems)} problem(s) in the type library:"]
        lines += [f"  {src}: {fld}: {msg}" for src, fld, msg in self.problems]
        super().__init__("\n".join(lines))
