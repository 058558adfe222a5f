"""L0's first half: bytes or text or a Python value in, one bounded JSON value out.

Runs before every stage (even L3 scans the parsed value, so escaped text cannot hide a
secret); its problems are reported as L0 findings. Everything is iterative or bounded by
`limits`, so non-UTF-8 bytes, malformed or deeply nested JSON and huge inputs end in a
clear message instead of a RecursionError, a hang or unbounded memory. The value is always
a fresh copy, so the stages may change it without touching the caller's object.
"""

import json
import math
from dataclasses import dataclass
from typing import Any

from compiler.ladder.contract import LadderLimits
from compiler.ladder.pointer import encode

# Beyond this an integer overflows float arithmetic in the stages (L0e scaling, JsonLogic,
# jsonschema's multipleOf) and is rarely meant as a number; it is refused at intake.
MAX_INTEGER = 2**63


@dataclass(frozen=True)
class Intake:
    value: Any = None
    problem: str | None = None
    path: str = ""
    text: str | None = None  # the decoded text, when the input was text and did not parse


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise ValueError(f"duplicate object key {key!r}")
            seen.add(key)
    return out


def _parse(text: str, limits: LadderLimits) -> Intake:
    text = text.removeprefix("\ufeff")
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=_no_duplicates)
    except json.JSONDecodeError as exc:
        return Intake(
            problem=f"malformed JSON at line {exc.lineno} column {exc.colno}: {exc.msg}",
            text=text,
        )
    except RecursionError:
        return Intake(
            problem=f"JSON nests too deep to parse (the limit is {limits.max_depth} levels)",
            text=text,
        )
    except ValueError as exc:
        return Intake(problem=f"invalid JSON: {exc}", text=text)
    return copy_checked(value, limits)


def intake(raw: Any, limits: LadderLimits) -> Intake:
    """Decode, parse and copy a payload; `problem` says what made it unusable."""
    if isinstance(raw, (bytes, bytearray, memoryview)):
        data = bytes(raw)
        if len(data) > limits.max_text_bytes:
            return Intake(problem=_too_big(len(data), limits))
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            return Intake(
                problem=f"payload is not valid UTF-8: byte 0x{data[exc.start]:02x} at offset "
                f"{exc.start} ({exc.reason}); send UTF-8 JSON",
                text=data.decode("utf-8", errors="replace"),
            )
        return _parse(text, limits)
    if isinstance(raw, str):
        if len(raw) > limits.max_text_bytes:
            return Intake(problem=_too_big(len(raw), limits))
        return _parse(raw, limits)
    return copy_checked(raw, limits)


def _too_big(size: int, limits: LadderLimits) -> str:
    return f"payload is {size} bytes; the limit is {limits.max_text_bytes} (limits.max_text_bytes)"


def _scalar_problem(value: Any) -> str | None:
    if value is None or isinstance(value, (str, bool)):
        return None
    if isinstance(value, int):
        if -MAX_INTEGER <= value <= MAX_INTEGER:
            return None
        digits = int(value.bit_length() * 0.30103) + 1  # str() refuses > 4300 digits
        return (
            f"an integer of about {digits} digits is out of range: integers must lie within "
            "+/-2**63 (send larger quantities as strings)"
        )
    if isinstance(value, float):
        return None if math.isfinite(value) else f"{value} is not a JSON number"
    return f"a {type(value).__name__} is not a JSON value"


def copy_checked(value: Any, limits: LadderLimits) -> Intake:
    """A fresh copy of a JSON value, refusing non-JSON types, excess depth and size."""
    if not isinstance(value, (dict, list)):
        problem = _scalar_problem(value)
        return Intake(problem=problem) if problem else Intake(value=value)
    root: Any = {} if isinstance(value, dict) else []
    stack: list[tuple[Any, Any, tuple[str | int, ...]]] = [(value, root, ())]
    nodes = 1
    while stack:
        src, dst, path = stack.pop()
        if len(path) >= limits.max_depth:
            return Intake(
                problem=f"payload nests deeper than {limits.max_depth} levels (limits.max_depth)",
                path=encode(path),
            )
        nodes += len(src)
        if nodes > limits.max_nodes:
            return Intake(
                problem=f"payload has more than {limits.max_nodes} values (limits.max_nodes)"
            )
        pairs = src.items() if isinstance(src, dict) else enumerate(src)
        for key, member in pairs:
            if isinstance(src, dict) and not isinstance(key, str):
                return Intake(problem=f"object key {key!r} is not a string", path=encode(path))
            if isinstance(member, dict):
                child: Any = {}
                stack.append((member, child, (*path, key)))
            elif isinstance(member, list):
                child = []
                stack.append((member, child, (*path, key)))
            else:
                problem = _scalar_problem(member)
                if problem:
                    return Intake(problem=problem, path=encode((*path, key)))
                child = member
            if isinstance(dst, dict):
                dst[key] = child
            else:
                dst.append(child)
    return Intake(value=root)


def parse_json_text(text: str, limits: LadderLimits, depth: int = 0) -> Any:
    """The object or array a string of JSON text holds, within `limits`; None if it holds none.

    `depth` is how deep the string already sits, so the parsed value plus its position stay
    within `limits.max_depth`. L0c parses such strings and L3 scans what they hold.
    """
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{" or len(text) > limits.max_text_bytes:
        return None
    try:
        parsed = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    room = max(1, limits.max_depth - depth)
    checked = copy_checked(parsed, limits.model_copy(update={"max_depth": room}))
    return None if checked.problem else checked.value
