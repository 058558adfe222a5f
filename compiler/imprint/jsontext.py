"""JSON text in (documents, filled templates): UTF-8, well-formed, bounded, or a clear error."""

import json
import re
from typing import Any

from compiler.imprint.errors import TemplateError
from compiler.imprint.limits import MAX_DOCUMENT_NESTING, MAX_JSON_BYTES
from compiler.jsontypes import json_type

# A JSON string literal, or an unterminated one running to the end of the text (a lone
# backslash included): every match succeeds where it starts, so the scan is one pass even
# when the text is all quotes and escapes.
_STRING = re.compile(r'"(?:[^"\\]|\\.)*(?:"|\\?\Z)', re.S)
_BRACKETS = re.compile(r"[\[\]{}]")


def parse_json(
    data: bytes | bytearray | str,
    *,
    expect: str | None = None,
    max_nesting: int = MAX_DOCUMENT_NESTING,
    max_bytes: int = MAX_JSON_BYTES,
) -> Any:
    """Decode JSON text with errors that say where and what to do.

    Args:
        data: UTF-8 bytes (a leading BOM is allowed) or text.
        expect: if given, the JSON type the top level must have (`"object"`, `"array"`, ...).
        max_nesting: deepest allowed nesting of arrays/objects (checked before decoding, so
            hostile input cannot exhaust the stack).
        max_bytes: largest accepted input.

    Returns:
        The decoded value.

    Raises:
        TemplateError: not UTF-8, too large, too deep, malformed, NaN/Infinity, or the top level
            has the wrong type.
    """
    if isinstance(data, bytes | bytearray):
        if len(data) > max_bytes:
            raise _too_large(len(data), max_bytes)
        raw = bytes(data)
        if raw.startswith(b"\xef\xbb\xbf"):
            raw = raw[3:]
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as err:
            raise TemplateError(
                "encoding",
                f"byte {err.start}",
                f"the input is not UTF-8 (byte 0x{raw[err.start]:02x} at offset {err.start})",
                "re-encode the text as UTF-8",
            ) from None
    elif isinstance(data, str):
        text = data
        if len(text) > max_bytes:
            raise _too_large(len(text), max_bytes)
    else:
        raise TemplateError(
            "argument", "$", f"expected JSON text, got {type(data).__name__}", "pass bytes or str"
        )
    depth = _max_depth(text)
    if depth > max_nesting:
        raise TemplateError(
            "limit",
            "$",
            f"the JSON nests {depth} levels deep (limit {max_nesting})",
            "flatten the data",
        )
    try:
        value = json.loads(text, parse_constant=_reject_constant)
    except TemplateError:
        raise
    except json.JSONDecodeError as err:
        raise TemplateError(
            "json",
            f"line {err.lineno} column {err.colno}",
            f"malformed JSON: {err.msg}",
            "fix the JSON text at that position",
        ) from None
    except ValueError:  # the one other refusal: an integer past Python's 4300-digit limit
        raise TemplateError(
            "json",
            "$",
            "the JSON holds an integer of more than 4300 digits, too long to read",
            "send smaller numbers",
        ) from None
    if expect is not None and json_type(value) != expect:
        raise TemplateError(
            "json",
            "$",
            f"the top level is {json_type(value)}, expected {expect}",
            f"send a JSON {expect}",
        )
    return value


def _max_depth(text: str) -> int:
    depth = deepest = 0
    for bracket in _BRACKETS.findall(_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def _reject_constant(name: str) -> Any:
    raise TemplateError("json", "$", f"{name} is not valid JSON", "send a finite number or null")


def _too_large(size: int, limit: int) -> TemplateError:
    return TemplateError(
        "limit", "$", f"the input is {size} bytes (limit {limit})", "send a smaller document"
    )
