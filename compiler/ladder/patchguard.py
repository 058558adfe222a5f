"""The guardrails around a model's RFC 6902 patch, shared by L2 and L6.

Only `replace` and `add` of a JSON scalar, at a path the schema declares, on a parent that
exists (objects gain a declared member, arrays never grow) are allowed; and the patched
payload, after L4's stripping, must validate against the schema. One bad operation or a
patched payload that still fails rejects the whole patch: patches are atomic.
"""

from dataclasses import dataclass, field
from typing import Any

from compiler.ladder.conformance import strip, violations
from compiler.ladder.intake import copy_checked
from compiler.ladder.pointer import PointerError, array_index, decode, encode, resolve
from compiler.ladder.stage import StageContext, StageReport

ALLOWED_OPS = ("replace", "add")
_SCALARS = (str, int, float, bool, type(None))


@dataclass
class PatchOutcome:
    payload: Any = None
    applied: list[tuple[tuple[str | int, ...], str, Any, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def _check_operation(op: Any, ctx: StageContext) -> tuple[tuple[str, ...], str] | str:
    """(path tokens, op name) of an allowed operation, or why it is not allowed."""
    if not isinstance(op, dict):
        return f"{op!r:.80} is not a JSON Patch operation object"
    name, path = op.get("op"), op.get("path")
    if name not in ALLOWED_OPS:
        return f"op {name!r} is not allowed (only {' and '.join(ALLOWED_OPS)} of values)"
    if not isinstance(path, str):
        return f"{name} has no string 'path'"
    if "value" not in op:
        return f"{name} {path} has no 'value'"
    try:
        tokens = decode(path)
    except PointerError as exc:
        return str(exc)
    if not tokens:
        return "the whole payload cannot be replaced"
    if ctx.view.locate(tokens) is None:
        return f"{path} is not a path the schema defines"
    if (
        not isinstance(op["value"], _SCALARS)
        or copy_checked(op["value"], ctx.contract.limits).problem
    ):
        return f"{name} {path}: only JSON scalar values may be patched, not structure"
    return tokens, name


def _apply(document: Any, tokens: tuple[str, ...], name: str, value: Any) -> tuple[Any, Any, str]:
    """Apply one checked operation in place; returns (final token, previous value, op)."""
    parent = resolve(document, tokens[:-1])
    last = tokens[-1]
    if isinstance(parent, dict):
        if name == "replace" and last not in parent:
            raise PointerError(f"replace {encode(tokens)}: nothing there to replace")
        existed = last in parent
        before = parent.get(last)
        parent[last] = value
        return last, before, "replace" if existed else "add"
    if isinstance(parent, list):
        index = array_index(last, len(parent))  # an existing element only: arrays never grow
        before = parent[index]
        parent[index] = value
        return index, before, "replace"
    raise PointerError(f"{encode(tokens[:-1])} is not an object or array")


def apply_guarded(payload: Any, operations: list[Any], ctx: StageContext) -> PatchOutcome:
    """Try a whole patch on a copy; the outcome has the new payload only if it was accepted."""
    outcome = PatchOutcome()
    checked = [_check_operation(op, ctx) for op in operations]
    outcome.problems = [c for c in checked if isinstance(c, str)]
    if outcome.problems:
        return outcome
    trial = copy_checked(payload, ctx.contract.limits).value
    valid = [c for c in checked if not isinstance(c, str)]
    for op, (tokens, name) in zip(operations, valid, strict=True):
        try:
            last, before, done = _apply(trial, tokens, name, op["value"])
        except PointerError as exc:
            outcome.problems.append(str(exc))
            outcome.applied = []
            return outcome
        outcome.applied.append(((*tokens[:-1], last), done, before, op["value"]))
    stripped = copy_checked(trial, ctx.contract.limits).value
    strip(stripped, ctx, StageReport("trial", stripped))
    remaining = violations(stripped, ctx)
    if remaining:
        outcome.applied = []
        outcome.problems = [
            f"the patched payload still fails: {p or '/'} {m}" for p, m in remaining[:3]
        ]
        return outcome
    outcome.payload = trial
    return outcome


def record(outcome: PatchOutcome, report: StageReport, rationale: str) -> None:
    """Turn a patch outcome into corrections (accepted) or one warning per problem."""
    if outcome.problems:
        for problem in outcome.problems:
            report.find("", "warning", f"model patch rejected: {problem}")
        return
    why = f"model patch: {rationale}" if rationale else "model patch"
    for path, name, before, after in outcome.applied:
        report.correct(path, "add" if name == "add" else "replace", before, after, why)
    report.payload = outcome.payload
