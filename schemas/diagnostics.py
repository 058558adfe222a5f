"""Compiler diagnostics: a stable code, where, what was wrong and what to do."""

from typing import Literal

from schemas.base import FrozenModel

DiagnosticCode = Literal[
    "E_SCHEMA",
    "E_TOO_LARGE",
    "E_DUPLICATE_STEP",
    "E_UNKNOWN_DEPENDENCY",
    "E_CYCLE",
    "E_NO_OUTPUTS",
    "E_BAD_EXTENSION",
    "E_PATH_ESCAPE",
    "E_DUPLICATE_WRITER",
    "E_UNKNOWN_PACK",
    "E_UNKNOWN_KIND",
    "E_UNKNOWN_SLOT",
    "E_UNKNOWN_ENTITY",
    "E_UNKNOWN_PROFILE",
    "E_UNBOUND_INPUT",
    "E_AMBIGUOUS_BINDING",
    "E_INCOMPATIBLE_BINDING",
    "E_POLICY",
    "E_MISSING_CODE",
    "E_UNDECLARED_OUTPUT",
    "E_KIND_MISMATCH",
    "E_TOO_MANY_STEPS",
    "E_UNKNOWN_SKILL",
    "E_SKILL_DEPRECATED",
    "E_SKILL_OUTPUT",
    "E_REQUIRED_SKILL_MISSING",
    "E_SKILL_DENIED_AND_PINNED",
    "E_EVALUATION_BUNDLE",
]


class Diagnostic(FrozenModel):
    code: DiagnosticCode
    message: str
    hint: str
    step_key: str | None = None
    slot: str | None = None
    field: str | None = None
