"""Pass A intake: a raw plan document becomes a PlannerCandidate or precise diagnostics.

The caps of schemas/bounds.py are checked here, on every path a plan comes in by (`forge run`,
`POST /v1/runs`, a recipe's or the planner's candidate), before anything is stored or started.
"""

import json
from typing import Any

from pydantic import ValidationError

from compiler.errors import CompilerError
from schemas.bounds import OBJECTIVE_MAX, PLAN_MAX_BYTES
from schemas.diagnostics import Diagnostic
from schemas.plan import PlannerCandidate

_TOO_LONG = frozenset({"string_too_long", "too_long"})


def parse_candidate(raw: Any) -> PlannerCandidate:
    """Validate a parsed JSON plan; every schema problem is reported with step and field."""
    size = _document_bytes(raw)
    if size > PLAN_MAX_BYTES:
        raise CompilerError(
            [
                Diagnostic(
                    code="E_TOO_LARGE",
                    message=f"the plan is {size:,} bytes as JSON; at most {PLAN_MAX_BYTES:,}",
                    hint="keep long material in input files, not in the plan",
                    field="plan",
                )
            ]
        )
    try:
        return PlannerCandidate.model_validate(raw)
    except ValidationError as exc:
        raise CompilerError([_diagnostic(raw, err) for err in exc.errors()]) from None


def check_objective(objective: str) -> str:
    """The objective, if it is within OBJECTIVE_MAX characters (what a run may be matched on).

    Raises:
        CompilerError: E_TOO_LARGE naming the objective, its length and the cap.
    """
    if len(objective) > OBJECTIVE_MAX:
        raise CompilerError(
            [
                Diagnostic(
                    code="E_TOO_LARGE",
                    message=f"the objective is {len(objective):,} characters; "
                    f"at most {OBJECTIVE_MAX:,} characters are accepted",
                    hint="say what the run should do in a paragraph; put the material it works "
                    "on in input files (--input NAME=PATH)",
                    field="objective",
                )
            ]
        )
    return objective


def _document_bytes(raw: Any) -> int:
    """The document's size as compact JSON (what the API's body limit counts, give or take)."""
    try:
        return len(json.dumps(raw, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    except (TypeError, ValueError):  # not JSON data: the schema says what is wrong with it
        return 0


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
    if err["type"] in _TOO_LONG:
        return _too_large(err, field or "plan", got, step_key)
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


def _too_large(err: Any, field: str, got: Any, step_key: str | None) -> Diagnostic:
    """A field or list over its cap: its size and the cap, never its (huge) value."""
    limit = (err.get("ctx") or {}).get("max_length")
    unit = "characters" if err["type"] == "string_too_long" else "entries"
    size = len(got) if isinstance(got, str | list | dict) else None
    said = f"{size:,} {unit}" if size is not None else f"more than {limit:,} {unit}"
    return Diagnostic(
        code="E_TOO_LARGE",
        message=f"{field} is {said}; at most {limit:,} {unit} are accepted",
        hint="shorten it: keep long material in input files, not in the plan (schemas/bounds.py)",
        step_key=step_key,
        field=field,
    )
