"""The compiler's two permanent error types; both carry everything a person needs to act."""

from collections.abc import Sequence

from schemas.diagnostics import Diagnostic


class CompilerError(Exception):
    """A plan was rejected. Carries every diagnostic found, not just the first."""

    def __init__(self, diagnostics: Sequence[Diagnostic]) -> None:
        self.diagnostics = list(diagnostics)
        lines = [f"{len(self.diagnostics)} problem(s) in the plan:"]
        for d in self.diagnostics:
            where = "/".join(x for x in (d.step_key, d.slot, d.field) if x) or "plan"
            lines.append(f"  {d.code} at {where}: {d.message} (hint: {d.hint})")
        super().__init__("\n".join(lines))


class PackError(Exception):
    """A type-library document is invalid: names the source file, the field and the fix."""

    def __init__(self, problems: Sequence[tuple[str, str, str]]) -> None:
        self.problems = list(problems)
        lines = [f"{len(self.problems)} problem(s) in the type library:"]
        lines += [f"  {src}: {fld}: {msg}" for src, fld, msg in self.problems]
        super().__init__("\n".join(lines))
