"""Pass A intake: a raw plan document becomes a PlannerCandidate or precise diagnostics."""

from typing import Any

from pydantic import ValidationError

from compiler.errors import CompilerError
from schemas.diagnostics import Diagnostic
from schemas.plan import PlannerCandidate


def parse_candidate(raw: Any) -> PlannerCandidate:
    """Validate a parsed JSON plan; every schema problem is reported with step and field."""
    try:
        return PlannerCandidate.model_validate(raw)
    except ValidationError as exc:
        raise CompilerError([_diagnostic(raw, err) for err in exc.errors()]) from None


def _diagnostic(raw: Any, err: Any) -> Diagnostic:
    loc = list(err["loc"])
    step_key = None
    if len(loc) >= 2 and loc[0] == "steps" and isinstance(loc[1], int):
        steps = raw.get("steps") if isinstance(raw, dict) else None
        if isinstance(steps, list) and loc[1] < len(steps) and isinstance(steps[loc[1]], dict):
            step_key = steps[loc[1]].get("step_key")
        step_key = str(step_key) if step_key is not None else f"steps[{loc[1]}]"
        loc = loc[2:]
    field = ".".join(str(x) for x in loc) or None
    got = err.get("input")
    shown = repr(got) if not isinstance(got, dict | list) else type(got).__name__
    message = err["msg"] if err["type"] == "missing" else f"{err['msg']} (got {shown[:80]})"
    return Diagnostic(
        code="E_SCHEMA",
        message=message,
        hint=(
            "fix the field to match the forge.plan/1 schema "
            "(see schemas/jsonschema/PlannerCandidate.json)"
        ),
        step_key=step_key,
        field=field,
    )
