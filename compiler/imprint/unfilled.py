"""What "left unfilled" means: the OMIT marker and the test for an untouched subtree."""

from typing import Any

from compiler.imprint.limits import MAX_NESTING
from compiler.imprint.tokens import looks_like_token


class Omit:
    """Marks a position whose optional value was left unfilled: it is dropped."""

    def __repr__(self) -> str:
        return "OMIT"


OMIT = Omit()


def untouched(value: Any, depth: int = 0) -> bool:
    """True when nothing in `value` was filled: only tokens/markers (keys are not looked at)."""
    if depth > MAX_NESTING:
        return False
    if isinstance(value, str):
        return looks_like_token(value)
    if isinstance(value, dict):
        return bool(value) and all(untouched(v, depth + 1) for v in value.values())
    if isinstance(value, list):
        return bool(value) and all(untouched(v, depth + 1) for v in value)
    return False


def asks_for_input(template: Any, depth: int = 0) -> bool:
    """True when a template holds something to fill or choose (any token but AUTO)."""
    if depth > MAX_NESTING:
        return True
    if isinstance(template, str):
        return looks_like_token(template) and not template.startswith("{AUTO")
    if isinstance(template, dict):
        return any(looks_like_token(k) or asks_for_input(v, depth + 1) for k, v in template.items())
    if isinstance(template, list):
        return any(asks_for_input(v, depth + 1) for v in template)
    return False


def kind_of(value: Any) -> str:
    """A short name for the JSON kind of a value, for error messages."""
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    if value is None:
        return "null"
    return f"a {type(value).__name__} ({str(value)[:40]!r})"
