"""RFC 6901 JSON Pointers: every path the ladder reports or accepts is one of these."""

from collections.abc import Sequence
from typing import Any

from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError

Token = str | int
Path = tuple[Token, ...]

WILDCARD = "*"


class PointerError(ForgeError, ValueError):
    """A pointer is malformed or does not lead to a value."""

    code = ErrorCode.POINTER_INVALID


def encode(path: Sequence[Token]) -> str:
    """Return the RFC 6901 pointer for a sequence of object keys and array indices."""
    if not path:
        return ""
    return "".join("/" + str(t).replace("~", "~0").replace("/", "~1") for t in path)


def decode(pointer: str) -> tuple[str, ...]:
    """Split an RFC 6901 pointer into unescaped reference tokens.

    Raises:
        PointerError: the pointer is neither empty nor starts with "/", or has a bad escape.
    """
    if pointer == "":
        return ()
    if not pointer.startswith("/"):
        raise PointerError(f"JSON Pointer {pointer!r} must be empty or start with '/'")
    tokens = []
    for raw in pointer[1:].split("/"):
        if "~" in raw.replace("~0", "").replace("~1", ""):
            raise PointerError(f"JSON Pointer {pointer!r} has a '~' not followed by 0 or 1")
        tokens.append(raw.replace("~1", "/").replace("~0", "~"))
    return tuple(tokens)


def array_index(token: str, length: int, *, allow_end: bool = False) -> int:
    """Interpret a reference token as an index into an array of `length` items.

    Raises:
        PointerError: the token is not a canonical non-negative integer within bounds.
    """
    if token == "-" and allow_end:
        return length
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PointerError(f"{token!r} is not an array index")
    index = int(token)
    if index > length or (index == length and not allow_end):
        raise PointerError(f"index {index} is out of range for an array of {length}")
    return index


def resolve(document: Any, tokens: Sequence[str]) -> Any:
    """Return the value a decoded pointer refers to.

    Raises:
        PointerError: a token names no member of the value it is applied to.
    """
    value = document
    for depth, token in enumerate(tokens):
        if isinstance(value, dict):
            if token not in value:
                raise PointerError(f"{encode(tokens[: depth + 1])} does not exist")
            value = value[token]
        elif isinstance(value, list):
            value = value[array_index(token, len(value))]
        else:
            raise PointerError(f"{encode(tokens[:depth])} is not an object or array")
    return value


def matches(pattern: Sequence[str], path: Sequence[Token]) -> bool:
    """Whether a concrete path matches a pattern whose "*" tokens stand for any array index."""
    if len(pattern) != len(path):
        return False
    return all(
        p == WILDCARD and isinstance(t, int) or p == str(t)
        for p, t in zip(pattern, path, strict=True)
    )
