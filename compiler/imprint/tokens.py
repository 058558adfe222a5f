r"""The template token grammar: `{FILL|type}`, `{FILL_ENUM|a|b}`, modifiers, markers; both ways.

A token is a whole JSON string. Parts are separated by `|`; inside an enum value or a modifier
value a literal `|` is written `\|` and a literal backslash `\\`, so every token parses back to
exactly the values it was rendered from.

Ranges (`range:`, `exclusive_range:`) are written `<min>-<max>` as the issue has it
(`range:1-100`, `range:-5--1`), `<min>-` with no maximum (`range:0-`), and `..<max>` with no
minimum (`range:..100`, `range:..-1`): the issue's `-<max>` would read as a negative number.
The parser accepts all of these and `..` in place of `-` between the bounds (`range:1..100`).
"""

import json
import re
from dataclasses import dataclass
from typing import Any

from compiler.imprint.errors import TemplateError

# `KEY_ENUM|a|b` extends the kinds (additively): a map key that must be one of the
# listed names (`propertyNames: {enum: [...]}`), as `KEY|string|...` is a free-form map key.
KINDS = ("FILL", "OPTIONAL", "AUTO", "FILL_ENUM", "OPTIONAL_ENUM", "KEY", "KEY_ENUM")
ENUM_KINDS = ("FILL_ENUM", "OPTIONAL_ENUM", "KEY_ENUM")
TYPES = ("string", "integer", "number", "boolean", "null", "object", "array")
# Modifiers in the order they are rendered. `exclusive_range` and `multiple_of` extend the
# issue's list (additively) so exclusive bounds and steps are visible at the point of use too.
MODIFIERS = (
    "format",
    "range",
    "exclusive_range",
    "multiple_of",
    "pattern",
    "min_length",
    "max_length",
    "default",
)
ONE_OF = "{ONE_OF}"
REF_CIRCULAR = "{REF: circular}"
REF_MAX_DEPTH = "{REF: max_depth}"
REF_MARKERS = (REF_CIRCULAR, REF_MAX_DEPTH)

_NUM = r"-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?"
_RANGE = re.compile(rf"^({_NUM})?(?:-|\.\.)({_NUM})?$")
_LOOKS_LIKE = re.compile(r"^\{(?:" + "|".join(KINDS) + r")(?:\|.*)?\}$", re.S)
_SPLIT = re.compile(r"\\(.)|(\|)", re.S)

Number = int | float


@dataclass(frozen=True, slots=True)
class Token:
    """One parsed token. `type` is None for enum tokens; `values` holds enum options as text."""

    kind: str
    type: str | None = None
    nullable: bool = False
    values: tuple[str, ...] = ()
    modifiers: tuple[tuple[str, str], ...] = ()

    def __str__(self) -> str:
        if self.kind in ENUM_KINDS:
            parts = [self.kind, *(escape(v) for v in self.values)]
        else:
            parts = [self.kind, f"{self.type}{'?' if self.nullable else ''}"]
            parts += [f"{name}:{escape(value)}" for name, value in self.modifiers]
        return "{" + "|".join(parts) + "}"

    def modifier(self, name: str) -> str | None:
        """Return the raw text of modifier `name`, or None when the token has none."""
        for key, value in self.modifiers:
            if key == name:
                return value
        return None

    def bounds(self) -> tuple[Number | None, Number | None, bool, bool]:
        """Return (minimum, maximum, minimum_exclusive, maximum_exclusive) from the range mods."""
        lo, hi = parse_range(self.modifier("range") or "-")
        xlo, xhi = parse_range(self.modifier("exclusive_range") or "-")
        return (
            xlo if xlo is not None else lo,
            xhi if xhi is not None else hi,
            xlo is not None,
            xhi is not None,
        )

    def default(self) -> tuple[bool, Any]:
        """Return (True, value) when the token carries `default:<json>`, else (False, None)."""
        raw = self.modifier("default")
        if raw is None:
            return False, None
        return True, json.loads(raw)


def escape(text: str) -> str:
    """Escape a backslash and `|` so the text can sit inside a token part."""
    return text.replace("\\", "\\\\").replace("|", "\\|")


def split_parts(body: str) -> list[str]:
    """Split a token body (without braces) on unescaped `|`, unescaping each part."""
    parts: list[str] = []
    current: list[str] = []
    last = 0
    for match in _SPLIT.finditer(body):
        current.append(body[last : match.start()])
        if match.group(2):
            parts.append("".join(current))
            current = []
        else:
            current.append(match.group(1))
        last = match.end()
    current.append(body[last:])
    parts.append("".join(current))
    return parts


def looks_like_token(value: Any) -> bool:
    """True for any string shaped like a token or marker: a value the model left unfilled."""
    if not isinstance(value, str) or not value.startswith("{"):
        return False
    return value in REF_MARKERS or value == ONE_OF or bool(_LOOKS_LIKE.match(value))


def parse_token(text: str, *, path: str = "$") -> Token | None:
    """Parse a token string; None when `text` is not a token at all.

    Args:
        text: the string to parse, e.g. `{FILL|string|format:uuid}`.
        path: the JSON path reported if the token is malformed.

    Returns:
        The parsed `Token`, or None for ordinary text and for the `{REF: ...}` markers.

    Raises:
        TemplateError: the text looks like a token but breaks the grammar.
    """
    if not isinstance(text, str) or not _LOOKS_LIKE.match(text):
        return None
    kind, *rest = split_parts(text[1:-1])
    if kind in ENUM_KINDS:
        return Token(kind=kind, values=tuple(rest))
    if not rest:
        raise _bad(path, text, f"{kind} needs a type, one of {', '.join(TYPES)}")
    type_text, *mods = rest
    nullable = type_text.endswith("?")
    base = type_text[:-1] if nullable else type_text
    if base not in TYPES:
        raise _bad(path, text, f"unknown type {base!r}; use one of {', '.join(TYPES)}")
    modifiers: list[tuple[str, str]] = []
    for mod in mods:
        name, sep, value = mod.partition(":")
        if not sep or name not in MODIFIERS:
            raise _bad(path, text, f"unknown modifier {mod!r}; use one of {', '.join(MODIFIERS)}")
        modifiers.append((name, value))
    return Token(kind=kind, type=base, nullable=nullable, modifiers=tuple(modifiers))


def parse_range(text: str) -> tuple[Number | None, Number | None]:
    """Parse `<min>-<max>`, `<min>-` or `..<max>` (see the module docstring) into numbers."""
    match = _RANGE.match(text)
    if not match:
        raise TemplateError(
            "token",
            "$",
            f"range {text!r} is not <min>-<max>",
            "write e.g. range:1-100, range:0- or range:..100",
        )
    return _number(match.group(1)), _number(match.group(2))


def format_range(low: Number | None, high: Number | None) -> str:
    """Render a range so an open minimum cannot be misread as a negative maximum."""
    if low is None:
        return f"..{format_number(high)}" if high is not None else "-"
    return f"{format_number(low)}-{format_number(high) if high is not None else ''}"


def format_number(value: Number) -> str:
    """Render a bound so `parse_range` reads it back exactly."""
    if isinstance(value, bool):
        raise TypeError("a bound must be a number")
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e16:
        return str(int(value))
    return repr(value) if isinstance(value, float) else str(value)


def format_enum_value(value: Any) -> str:
    """Render one enum option: strings as they are, anything else as compact JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _number(text: str | None) -> Number | None:
    if text is None:
        return None
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return float(text)


def _bad(path: str, text: str, why: str) -> TemplateError:
    return TemplateError("token", path, f"malformed token {text!r}: {why}", "rewrite the token")
