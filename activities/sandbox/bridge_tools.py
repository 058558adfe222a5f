"""The bridge's built-in tools: `http.request` (egress allowlist, public addresses) and `log.note`.

`artifact.evaluate` is the evaluator's and is injected by the caller with the others:
`{**builtin_handlers(), "artifact.evaluate": handler}`.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Mapping
from typing import Any

from activities.masked_output import clipped
from activities.net.outbound import (
    AddressRefused,
    OutboundClient,
    OutboundError,
    OutboundRefused,
    OutboundResponse,
    OutboundTimeout,
)
from activities.sandbox.bridge_call import BridgeCall, ToolError, ToolHandler, ToolRefused
from compiler.egress import egress_decision, named_ip
from schemas.bridge import LOG_NOTED, LogNoted
from schemas.error_codes import ErrorCode

__all__ = [
    "MAX_HTTP_BODY",
    "MAX_NOTE_BYTES",
    "HttpRequest",
    "builtin_handlers",
    "log_note",
]

MAX_HTTP_BODY = 1 << 20  # response bytes returned; the rest is cut and `truncated` set
MAX_REQUEST_BODY = 512 * 1024
MAX_NOTE_BYTES = 4096
DEFAULT_TIMEOUT_S = 30.0
MAX_TIMEOUT_S = 120.0
MAX_HEADERS = 64
_HEADER_NAME = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}")
# The bridge decides these itself: where the request goes, how it is framed, that no proxy is used.
_FORBIDDEN_HEADERS = frozenset(
    {"host", "content-length", "transfer-encoding", "connection", "upgrade", "te", "trailer"}
)
_HTTP_ARGS = frozenset({"method", "url", "headers", "body", "body_base64", "timeout_s"})
_LEVELS = ("debug", "info", "warning", "error")


def builtin_handlers(client: OutboundClient | None = None) -> dict[str, ToolHandler]:
    """The tools every bridge offers (a step still calls only its allowed_tool_ids).

    `client` sends http.request's requests; tests give one with their own resolver.
    """
    return {"http.request": HttpRequest(client or OutboundClient()), "log.note": log_note}


class HttpRequest:
    """The http.request tool: the egress allowlist, then the outbound client (public addresses)."""

    def __init__(self, client: OutboundClient) -> None:
        self._client = client

    def __call__(self, args: dict[str, Any], call: BridgeCall) -> dict[str, Any]:
        """One HTTP request to an allowlisted URL; 3xx, 4xx and 5xx are responses, not errors.

        Args (in `args`): method (default GET), url, headers {name: value}, body (text) or
        body_base64, timeout_s (default 30, at most 120).

        Returns:
            {status, reason, headers: [[name, value], ...] (no Set-Cookie), body (text) or
            body_base64, truncated, url}.

        Raises:
            ToolRefused: EGRESS_BLOCKED (not on the allowlist, or its host resolves to an
                address that is not public) or BAD_ARGS, before anything is sent.
            ToolError: HTTP_TIMEOUT or HTTP_ERROR (no response: DNS, connection, TLS).
        """
        method, url, headers, body, timeout = _http_args(args)
        egress = call.policy.egress
        decision = egress_decision(method, url, egress)
        if not decision.allowed or decision.target is None or decision.rule_index is None:
            raise ToolRefused(ErrorCode.EGRESS_BLOCKED, decision.reason)
        # Only a rule that names an IP itself lets the request reach an address that is not
        # public; a rule naming a host name never does, whatever the name resolves to.
        named = named_ip(egress.allow[decision.rule_index])
        shown = decision.target.split("?", 1)[0]
        try:
            response = self._client.send(
                method,
                decision.target,
                headers=headers,
                body=body,
                timeout_s=timeout,
                max_body=MAX_HTTP_BODY,
                named=() if named is None else (named,),
            )
        except AddressRefused as err:
            raise ToolRefused(
                ErrorCode.EGRESS_BLOCKED,
                f"{method} {shown}: {err.what}: the bridge only connects to public addresses; "
                "name the IP itself in an egress rule to allow it",
            ) from None
        except OutboundTimeout:
            raise _timeout(method, shown, timeout) from None
        except OutboundRefused as err:
            raise ToolRefused(ErrorCode.EGRESS_BLOCKED, f"{method} {shown}: {err}") from None
        except OutboundError as err:
            raise ToolError(ErrorCode.HTTP_ERROR, f"{method} {shown}: {err}") from None
        return _response(response, decision.target)


def _timeout(method: str, shown: str, timeout: float) -> ToolError:
    return ToolError(
        ErrorCode.HTTP_TIMEOUT, f"{method} {shown} did not answer within {timeout:g} s (timeout_s)"
    )


def _http_args(args: dict[str, Any]) -> tuple[str, str, dict[str, str], bytes | None, float]:
    unknown = sorted(set(args) - _HTTP_ARGS)
    if unknown:
        raise _bad(f"unknown arguments {unknown}; http.request takes {sorted(_HTTP_ARGS)}")
    method, url = args.get("method", "GET"), args.get("url")
    if not isinstance(method, str) or not isinstance(url, str):
        raise _bad("give 'url' (and 'method', default GET) as strings")
    headers = _headers(args.get("headers") or {})
    body = _body(args.get("body"), args.get("body_base64"))
    timeout = args.get("timeout_s", DEFAULT_TIMEOUT_S)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise _bad(f"timeout_s must be a number of seconds, not {timeout!r}")
    if not 0 < timeout <= MAX_TIMEOUT_S:
        raise _bad(f"timeout_s must be more than 0 and at most {MAX_TIMEOUT_S:g}, not {timeout}")
    return method.upper(), url, headers, body, float(timeout)


def _headers(raw: Any) -> dict[str, str]:
    if not isinstance(raw, Mapping) or len(raw) > MAX_HEADERS:
        raise _bad(f"headers must be an object of at most {MAX_HEADERS} name: value strings")
    headers: dict[str, str] = {}
    for name, value in raw.items():
        if not isinstance(value, str) or not _HEADER_NAME.fullmatch(name):
            raise _bad(f"header {str(name)[:80]!r} needs a token name and a string value")
        if name.lower() in _FORBIDDEN_HEADERS or name.lower().startswith("proxy-"):
            raise _bad(f"header {name} is set by the bridge, not by the step; leave it out")
        if len(value) > 8192 or any(c in value for c in "\r\n\0"):
            raise _bad(f"header {name}'s value is over 8 KiB or holds CR, LF or NUL")
        headers[name] = value
    return headers


def _body(text: Any, encoded: Any) -> bytes | None:
    if text is not None and encoded is not None:
        raise _bad("give body (text) or body_base64, not both")
    if text is not None and not isinstance(text, str):
        raise _bad("body must be text; send bytes as body_base64")
    if encoded is not None and not isinstance(encoded, str):
        raise _bad("body_base64 must be a base64 string")
    try:
        data = text.encode("utf-8") if text is not None else None
        if encoded is not None:
            data = base64.b64decode(encoded, validate=True)
    except (binascii.Error, UnicodeEncodeError) as exc:
        raise _bad(f"the body cannot be encoded: {exc}") from None
    if data is not None and len(data) > MAX_REQUEST_BODY:
        raise _bad(f"the body is {len(data)} bytes; the bridge sends at most {MAX_REQUEST_BODY}")
    return data


def _response(response: OutboundResponse, url: str) -> dict[str, Any]:
    result: dict[str, Any] = {
        "status": response.status,
        "reason": response.reason,
        # Set-Cookie is dropped: the step keeps no cookie jar, and results are recorded.
        "headers": [[k, v] for k, v in response.headers if k.lower() != "set-cookie"],
        "truncated": response.truncated,
        "url": url,
    }
    try:
        result["body"] = response.body.decode("utf-8")
    except UnicodeDecodeError:
        result["body_base64"] = base64.b64encode(response.body).decode("ascii")
    return result


def _bad(message: str) -> ToolRefused:
    return ToolRefused(ErrorCode.BAD_ARGS, f"http.request: {message}")


def log_note(args: dict[str, Any], call: BridgeCall) -> dict[str, Any]:
    """Record a note of the step as a log.noted.v1 event; text over 4 KiB is cut.

    Returns:
        {event_id, truncated}.
    """
    text, level = args.get("text"), args.get("level", "info")
    unknown = sorted(set(args) - {"text", "level"})
    if unknown or not isinstance(text, str) or level not in _LEVELS:
        raise ToolRefused(
            ErrorCode.BAD_ARGS,
            f"log.note takes text (a string) and level ({', '.join(_LEVELS)}); got {sorted(args)}",
        )
    raw = text.encode("utf-8")
    truncated = len(raw) > MAX_NOTE_BYTES
    if truncated:
        # Masked before the cut; the cut counts characters, then bytes (a note is stored).
        text = clipped(text, MAX_NOTE_BYTES, "event")
        size = len(text.encode("utf-8"))
        if size > MAX_NOTE_BYTES:
            text = clipped(text, len(text) * MAX_NOTE_BYTES // size, "event")
    policy = call.policy
    note = LogNoted(
        step_key=policy.step_key,
        attempt=policy.attempt,
        iteration=policy.iteration,
        level=level,
        text=text,
        truncated=truncated,
        call_index=call.index,
    )
    return {"event_id": call.emit(LOG_NOTED, note), "truncated": truncated}
