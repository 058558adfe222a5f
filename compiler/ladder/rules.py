"""JsonLogic for L5, through the `json-logic-modernized` package.

That package passes every case of the official conformance file (tests/ladder prove it
against shared/reference/jsonlogic-tests.json); it recurses once per level of a rule, so
rules are checked here for shape and depth when a contract is created, and evaluation
errors (a division by zero, an overflow, `min` of nothing) come back as messages instead of raising.
"""

from typing import Any

from json_logic import jsonLogic, operations

# Operators the package evaluates without pre-evaluating their arguments.
_SPECIAL = frozenset(
    {"var", "missing", "missing_some", "filter", "map", "reduce", "all", "none", "some"}
)
KNOWN_OPERATORS = frozenset(operations) | _SPECIAL


def rule_problem(logic: Any, max_depth: int) -> str | None:
    """Why a JsonLogic rule cannot be used (unknown operator, bad shape, too deep), or None."""
    stack: list[tuple[Any, int]] = [(logic, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > max_depth:
            return f"nests deeper than {max_depth} levels"
        if isinstance(node, list):
            stack += [(n, depth + 1) for n in node]
        elif isinstance(node, dict):
            if len(node) != 1:
                return f"an operation must have exactly one operator, got {sorted(node)}"
            ((operator, args),) = node.items()
            if operator not in KNOWN_OPERATORS:
                return f"unknown JsonLogic operator {operator!r}"
            stack.append((args, depth + 1))
        elif not (node is None or isinstance(node, (str, int, float, bool))):
            return f"{type(node).__name__} is not JSON"
    return None


def evaluate(logic: Any, data: Any) -> tuple[Any, str | None]:
    """Evaluate a checked rule; returns (result, None) or (None, what went wrong)."""
    try:
        return jsonLogic(logic, data), None
    except ZeroDivisionError:
        return None, "division by zero"
    except ArithmeticError as exc:  # OverflowError: a number too large for float arithmetic
        return None, f"{type(exc).__name__}: {exc}"
    except (TypeError, ValueError, KeyError, IndexError, AttributeError) as exc:
        return None, f"{type(exc).__name__}: {exc}"


def truthy(value: Any) -> bool:
    """JsonLogic truthiness: JavaScript's, except that an empty array is falsy."""
    if isinstance(value, dict):
        return True
    return bool(value)
