"""L5 domain validators: the contract's JsonLogic rules, per document or per array item.

Ranges, cross-field consistency and caps, evaluated on the whole document or on each
element of a top-level array.

A rule whose `requires` names a field that is missing or null is skipped (an absent
optional field is not a violation); a rule that cannot be evaluated on this payload (a
division by zero) is reported at the rule's severity.
"""

from typing import Any

from compiler.ladder.pointer import decode, encode
from compiler.ladder.result import Severity
from compiler.ladder.rules import evaluate, truthy
from compiler.ladder.stage import StageContext, StageReport

STAGE = "L5"
_MISSING = object()


def _lookup(data: Any, dotted: str) -> Any:
    for part in dotted.split(".") if dotted else ():
        if isinstance(data, dict) and part in data:
            data = data[part]
        elif isinstance(data, list) and part.isdigit() and int(part) < len(data):
            data = data[int(part)]
        else:
            return _MISSING
    return data


def failures(payload: Any, ctx: StageContext) -> list[tuple[str, Severity, str]]:
    """Every rule that does not hold (or cannot be evaluated): (pointer, severity, message)."""
    found: list[tuple[str, Severity, str]] = []
    for rule in ctx.contract.rules:
        if rule.scope == "each_item" and isinstance(payload, list):
            targets: list[tuple[tuple[int, ...], Any]] = list(enumerate_items(payload))
        else:
            targets = [((), payload)]
        suffix = decode(rule.path)
        for prefix, data in targets:
            if any(_lookup(data, name) in (None, _MISSING) for name in rule.requires):
                continue
            result, problem = evaluate(rule.logic, data)
            where = encode((*prefix, *suffix))
            if problem is not None:
                message = f"rule {rule.rule_id!r} could not be evaluated: {problem}"
                found.append((where, rule.severity, message))
            elif not truthy(result):
                found.append((where, rule.severity, f"{rule.message} (rule {rule.rule_id!r})"))
    return found


def domain(payload: Any, *, ctx: StageContext) -> StageReport:
    """Evaluate every rule; a falsy result is a finding at the rule's severity."""
    report = StageReport(STAGE, payload)
    for where, severity, message in failures(payload, ctx):
        report.find(where, severity, message)
    return report


def enumerate_items(payload: list[Any]) -> list[tuple[tuple[int, ...], Any]]:
    """(path prefix, element) for each element of a top-level array."""
    return [((index,), item) for index, item in enumerate(payload)]
