"""The guardrails around a model's RFC 6902 patch, shared by L2 and L6.

Only `replace` and `add` of a JSON scalar, at a path the schema declares, on a parent that
exists are allowed: objects gain a declared member, array elements may be replaced but
arrays never grow (an `add` into an array inserts, so it is refused), and an object or
array is never replaced (a patch changes values, it does not remove structure). The
patched payload must then pass three checks: after L4's stripping it validates against
the schema; the guard finds nothing in the values the patch writes; and no domain rule
(L5) fails that did not fail before. One bad operation or one failed check rejects the
whole patch: patches are atomic.
"""

from dataclasses import dataclass, field
from typing import Any

from compiler.ladder.conformance import strip, violations
from compiler.ladder.domain import failures
from compiler.ladder.guard import hits_in_value
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
    sensitive: dict[str, str] = field(default_factory=dict)  # what the guard found in values


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


def _apply(
    document: Any, tokens: tuple[str, ...], name: str, value: Any
) -> tuple[Any, Any, str] | str:
    """Apply one checked operation in place: (final token, previous value, op), or why not."""
    try:
        parent = resolve(document, tokens[:-1])
    except PointerError as exc:
        return str(exc)
    last: Any = tokens[-1]
    path = encode(tokens)
    if isinstance(parent, dict):
        if name == "replace" and last not in parent:
            return f"replace {path}: nothing there to replace"
        existed = last in parent
        before = parent.get(last)
        done = "replace" if existed else "add"
    elif isinstance(parent, list):
        if name == "add":  # RFC 6902 add inserts into an array, and arrays never grow
            return f"add {path} would insert into an array; only replace may change an element"
        try:
            last = array_index(last, len(parent))  # an existing element only
        except PointerError as exc:
            return str(exc)
        before, done = parent[last], "replace"
    else:
        return f"{encode(tokens[:-1])} is not an object or array"
    if isinstance(before, (dict, list)):
        kind = "an object" if isinstance(before, dict) else "an array"
        return f"{name} {path} would replace {kind} with a scalar; a patch never removes structure"
    parent[last] = value
    return last, before, done


def _guarded(trial: Any, outcome: PatchOutcome, before_rules: set[Any], ctx: StageContext) -> None:
    """The checks on the patched payload: schema, guard on the new values, domain rules."""
    stripped = copy_checked(trial, ctx.contract.limits).value
    strip(stripped, ctx, StageReport("trial", stripped))
    remaining = violations(stripped, ctx)
    outcome.problems = [
        f"the patched payload still fails: {p or '/'} {m}" for p, m in remaining[:3]
    ]
    for path, _, _, value in outcome.applied:
        found = hits_in_value(path, value, ctx)
        outcome.sensitive.update(found)
        outcome.problems += [
            f"the value for {encode(path)} holds sensitive content ({shown})"
            for shown in found.values()
        ]
    broken = [f for f in failures(trial, ctx) if f not in before_rules]
    outcome.problems += [
        f"the patched payload breaks a domain rule at {p or '/'}: {m}" for p, _, m in broken[:3]
    ]


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
        done = _apply(trial, tokens, name, op["value"])
        if isinstance(done, str):
            outcome.problems.append(done)
            outcome.applied = []
            return outcome
        last, before, op_name = done
        outcome.applied.append(((*tokens[:-1], last), op_name, before, op["value"]))
    _guarded(trial, outcome, set(failures(payload, ctx)), ctx)
    if outcome.problems:
        outcome.applied = []
        return outcome
    outcome.payload = trial
    return outcome


def record(outcome: PatchOutcome, report: StageReport, rationale: str) -> None:
    """Turn a patch outcome into corrections (accepted) or one warning per problem."""
    report.sensitive.update(outcome.sensitive)
    if outcome.problems:
        for problem in outcome.problems:
            report.find("", "warning", f"model patch rejected: {problem}")
        return
    why = f"model patch: {rationale}" if rationale else "model patch"
    for path, name, before, after in outcome.applied:
        report.correct(path, "add" if name == "add" else "replace", before, after, why)
    report.payload = outcome.payload
