"""The bridge's wire format: one JSON request per line in, one JSON reply per line out.

Request `{"id", "tool", "args", "key"}`; reply `{"id", "ok": true, "result"}` or
`{"id", "ok": false, "error": {"class", "message"}}`.
"""

from __future__ import annotations

import json
from typing import Any

from activities.sandbox.client.forge_bridge import MAX_REQUEST_BYTES

__all__ = ["Request", "error_reply", "ok_reply", "parse_request", "too_long"]

Request = tuple[Any, str, dict[str, Any], str | None]  # id, tool, args, client key


def parse_request(line: bytes) -> Request | str:
    """(id, tool, args, key) of a request line, or why it is not a request."""
    try:
        request = _DECODER.decode(line.decode("utf-8"))
    except (ValueError, RecursionError) as exc:
        return f"the request line is not JSON: {str(exc)[:200]}"
    if not isinstance(request, dict):
        return "a request must be a JSON object {id, tool, args, key}"
    extra = sorted(set(request) - {"id", "tool", "args", "key"})
    tool, args, key = request.get("tool"), request.get("args"), request.get("key")
    if extra:
        return f"unknown request fields {extra}; a request has id, tool, args, key"
    if not isinstance(tool, str) or not tool:
        return "the request names no tool: give 'tool' as a string such as 'log.note'"
    if args is not None and not isinstance(args, dict):
        return f"'args' of {tool[:100]} must be an object, not {type(args).__name__}"
    if key is not None and not isinstance(key, str):
        return f"'key' must be a string or null, not {type(key).__name__}"
    return request.get("id"), tool, args or {}, key


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Built once: json.loads/dumps with options build a new decoder/encoder on every call.
_DECODER = json.JSONDecoder(parse_constant=_no_constant)
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def _line(body: dict[str, Any]) -> bytes:
    return _ENCODER.encode(body).encode() + b"\n"


def ok_reply(request_id: Any, result: Any) -> bytes:
    """The reply carrying `result`; TypeError/ValueError when the result is not JSON."""
    return _line({"id": request_id, "ok": True, "result": result})


def error_reply(request_id: Any, failure_class: str, message: str) -> bytes:
    return _line(
        {"id": request_id, "ok": False, "error": {"class": failure_class, "message": message}}
    )


def too_long() -> str:
    return f"a request line is longer than {MAX_REQUEST_BYTES} bytes; pass a file path instead"
