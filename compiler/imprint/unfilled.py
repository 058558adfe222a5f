"""What "left unfilled" means: the OMIT marker and the test for an untouched subtree."""

import json
from typing import Any

from compiler.imprint.limits import MAX_NESTING
from compiler.imprint.tokens import looks_like_token
from compiler.jsontypes import json_type


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
    """What a value is, for error messages: its JSON type and, for a scalar, its JSON text.

    `string "7"`, `integer 7`, `boolean true`, `null`, `object`, `array`: in the words of the
    JSON the model wrote, as the other type errors name it (compiler/jsontypes.py).
    """
    kind = json_type(value)
    if value is None or isinstance(value, dict | list):
        return kind
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):  # not JSON at all (a set, bytes): its Python repr
        text = repr(value)
    return f"{kind} {text if len(text) <= 40 else text[:37] + '...'}"
