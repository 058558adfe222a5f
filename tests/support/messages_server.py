"""A real local HTTP server that speaks the Anthropic Messages API from a model script.

Tests point the real `anthropic` SDK (through AnthropicProvider) at `server.base_url`; every
request body is kept in `server.requests`, so a test can assert what went over the wire.

Like the API, with thinking on it refuses (400 invalid_request_error) a final assistant message
that has tool_use but does not start with a thinking or redacted_thinking block, and a thinking
block whose signature is not the one it answered that text with (or `thinking_signature` of
it): thinking must go back unchanged.

    with MessagesServer(Script.from_data({...})) as server:
        provider = AnthropicProvider("test-key", base_url=server.base_url)
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any

from pydantic import ValidationError

from activities.models.script import (
    Script,
    ScriptAnswer,
    ScriptThinking,
    ScriptUnmatched,
    thinking_signature,
)
from schemas.models import (
    ContentBlock,
    Message,
    ModelRequest,
    RedactedThinkingBlock,
    TextBlock,
    ThinkingBlock,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
)

__all__ = ["ERROR_TYPES", "MessagesServer"]

ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    402: "billing_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    422: "invalid_request_error",
    429: "rate_limit_error",
    500: "api_error",
    504: "timeout_error",
    529: "overloaded_error",
}
_SAMPLING = ("temperature", "top_p", "top_k")
_THINKING = ("thinking", "redacted_thinking")
_THINKING_ON = ("enabled", "adaptive")
_TRUNCATED = b'{"id": "msg_truncated", "type": "message", "role": "assistant", "content": [{"ty'


class MessagesServer:
    """ThreadingHTTPServer on 127.0.0.1 (a free port) answering POST /v1/messages from a Script.

    Args:
        script: The answers, shared with the scripted provider's format.
        api_key: When given, a request whose x-api-key differs gets 401 authentication_error,
            as the real API answers a bad key.
    """

    def __init__(self, script: Script, *, api_key: str | None = None, port: int = 0) -> None:
        self.script = script
        self.api_key = api_key
        self._lock = threading.Lock()
        self._requests: list[dict[str, Any]] = []
        self._headers: list[dict[str, str]] = []
        self._count = 0
        self._messages = 0
        self._answered = 0  # answers written (a delayed one counts once it is sent)
        self._signed: set[tuple[str, str]] = set()  # (thinking, signature) pairs answered
        self._httpd = _Server(("127.0.0.1", port), _Handler)
        self._httpd.owner = self
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="messages-server",
            daemon=True,
        )

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def answered(self) -> int:
        """How many requests have been answered (an answer a delay holds back is not yet)."""
        with self._lock:
            return self._answered

    @property
    def requests(self) -> list[dict[str, Any]]:
        """Every JSON body received on /v1/messages, in arrival order."""
        with self._lock:
            return list(self._requests)

    @property
    def headers(self) -> list[dict[str, str]]:
        """The (lower-cased) headers of those requests, in the same order."""
        with self._lock:
            return list(self._headers)

    @property
    def request_count(self) -> int:
        """Every HTTP request received, on any path."""
        with self._lock:
            return self._count

    def __enter__(self) -> MessagesServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=10)

    # ---- called from handler threads -----------------------------------------------------

    def _received(self, headers: Mapping[str, str], body: dict[str, Any] | None) -> None:
        with self._lock:
            self._count += 1
            if body is not None:
                self._requests.append(body)
                self._headers.append(dict(headers))

    def _next_message_id(self) -> str:
        with self._lock:
            self._messages += 1
            return f"msg_forge{self._messages:016d}"

    def _signed_by_us(self, thinking: str, signature: str) -> bool:
        if signature == thinking_signature(thinking):
            return True
        with self._lock:
            return (thinking, signature) in self._signed

    def _sign(self, answer: ScriptAnswer) -> None:
        with self._lock:
            for block in answer.content:
                if isinstance(block, ScriptThinking) and block.signature is not None:
                    self._signed.add((block.thinking, block.signature))


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: MessagesServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (its timeout) closes the socket before a delayed answer is
        # written; that is the test working, not a server fault.
        return None


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:
        return None

    def do_GET(self) -> None:
        self.server.owner._received(_lower(self.headers.items()), None)
        self._error(404, f"no route GET {self.path}: this server speaks POST /v1/messages")

    def do_POST(self) -> None:
        owner = self.server.owner
        headers = _lower(self.headers.items())
        raw = self.rfile.read(int(headers.get("content-length") or 0))
        if self.path.split("?", 1)[0] != "/v1/messages":
            owner._received(headers, None)
            self._error(404, f"no route POST {self.path}: this server speaks POST /v1/messages")
            return
        try:
            body = json.loads(raw)
        except ValueError as exc:
            owner._received(headers, None)
            self._error(400, f"the request body is not JSON: {exc}")
            return
        owner._received(headers, body)
        if owner.api_key is not None and _api_key(headers) != owner.api_key:
            self._error(401, "invalid x-api-key")
            return
        sampling = sorted(k for k in _SAMPLING if k in body)
        if sampling:
            # API version 2026-10-21 refuses sampling parameters at any value.
            self._error(400, f"{sampling[0]}: Extra inputs are not permitted")
            return
        try:
            request = _model_request(body, headers.get("x-forge-consumer") or "executor")
        except _Invalid as exc:
            self._error(400, str(exc))
            return
        except (ValidationError, KeyError, TypeError, ValueError) as exc:
            self._error(400, f"the request is not a Messages request Forge sends: {exc}")
            return
        problem = _thinking_problem(body, owner)
        if problem is not None:
            self._error(400, problem)
            return
        try:
            answer = owner.script.answer(request, known_hash=headers.get("x-forge-prompt-hash"))
        except ScriptUnmatched as exc:
            self._error(400, str(exc))
            return
        if answer.delay_s:
            time.sleep(answer.delay_s)
        self._answer(answer, str(body["model"]))

    def _answer(self, answer: ScriptAnswer, model: str) -> None:
        failure = answer.failure
        if failure is not None and failure.malformed:
            data = failure.body.encode() if failure.body is not None else _TRUNCATED
            self._send(200, data)
            return
        if failure is not None:
            assert failure.status is not None
            extra = {"retry-after": "1"} if failure.status == 429 else {}
            self._error(failure.status, failure.message or "scripted error", extra)
            return
        self.server.owner._sign(answer)
        usage = answer.usage
        message = {
            "id": self.server.owner._next_message_id(),
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [b.model_dump(mode="json") for b in answer.content],
            "stop_reason": answer.stop_reason,
            "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cache_read_input_tokens": usage.cache_read_tokens,
                "cache_creation_input_tokens": usage.cache_creation_tokens,
            },
        }
        self._send(200, json.dumps(message).encode())

    def _error(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        kind = ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
        self._send(status, json.dumps(body).encode(), headers)

    def _send(self, status: int, data: bytes, headers: Mapping[str, str] | None = None) -> None:
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", f"req_forge_{status}")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)
        with self.server.owner._lock:
            self.server.owner._answered += 1


def _lower(items: Iterable[tuple[str, str]]) -> dict[str, str]:
    return {name.lower(): value for name, value in items}


def _api_key(headers: Mapping[str, str]) -> str | None:
    """The key of a request: SDK 2.x sends `Authorization: Bearer`, older ones `x-api-key`."""
    authorization = headers.get("authorization") or ""
    if authorization.lower().startswith("bearer "):
        return authorization[len("bearer ") :]
    return headers.get("x-api-key")


def _model_request(body: dict[str, Any], consumer: str) -> ModelRequest:
    """The ModelRequest a wire body stands for (timeout_s is not on the wire: None)."""
    system = body.get("system") or ""
    cached = False
    if isinstance(system, list):
        cached = any("cache_control" in b for b in system)
        system = "\n".join(b["text"] for b in system)
    tools = body.get("tools") or []
    cached = cached or any("cache_control" in t for t in tools)
    thinking = body.get("thinking") or {}
    return ModelRequest.model_validate(
        {
            "model": f"anthropic:{body['model']}",
            "consumer": consumer,
            "system": system,
            "messages": [_message(m, i) for i, m in enumerate(body["messages"])],
            "tools": [
                ToolDef(
                    name=t["name"],
                    description=t.get("description", ""),
                    input_schema=t["input_schema"],
                )
                for t in tools
            ],
            "max_tokens": body["max_tokens"],
            "thinking_budget_tokens": thinking.get("budget_tokens")
            if thinking.get("type") == "enabled"
            else None,
            "cache_prefix": cached,
        }
    )


class _Invalid(ValueError):
    """A request the API refuses, with the API's message (`messages.1.content.0...: ...`)."""


def _thinking_problem(body: dict[str, Any], owner: MessagesServer) -> str | None:
    """Why the API would refuse the thinking blocks of `body` (thinking on), or None.

    Every thinking block must carry the signature it was answered with, and the final
    assistant message, when it has tool_use, must start with thinking (the API needs only
    that one: thinking of earlier turns may be left out).
    """
    thinking = body.get("thinking") or {}
    if thinking.get("type") not in _THINKING_ON:
        return None
    messages = body["messages"]
    for m, message in enumerate(messages):
        content = message["content"]
        for c, block in enumerate(content if isinstance(content, list) else []):
            if block["type"] == "thinking" and not owner._signed_by_us(
                block["thinking"], block["signature"]
            ):
                return f"messages.{m}.content.{c}: Invalid `signature` in `thinking` block"
    last = max((m for m, msg in enumerate(messages) if msg["role"] == "assistant"), default=None)
    if last is None or not isinstance(messages[last]["content"], list):
        return None
    content = messages[last]["content"]
    if not any(b["type"] == "tool_use" for b in content) or content[0]["type"] in _THINKING:
        return None
    return (
        f"messages.{last}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
        f"`{content[0]['type']}`. When `thinking` is enabled, a final `assistant` message must "
        "start with a thinking block (before the last set of `tool_use` and `tool_result` "
        "blocks). Send back the thinking blocks of previous turns unchanged, or disable "
        "`thinking`. See https://docs.claude.com/en/docs/build-with-claude/extended-thinking"
    )


def _required(block: dict[str, Any], field: str, where: str) -> str:
    value = block.get(field)
    if not isinstance(value, str):
        problem = "Field required" if value is None else "Input should be a valid string"
        raise _Invalid(f"{where}.{field}: {problem}")
    return value


def _message(message: dict[str, Any], index: int) -> Message:
    content = message["content"]
    if isinstance(content, str):
        return Message(role=message["role"], content=[TextBlock(text=content)])
    blocks: list[ContentBlock] = []
    for position, block in enumerate(content):
        where = f"messages.{index}.content.{position}"
        if block["type"] == "thinking":
            blocks.append(
                ThinkingBlock(
                    thinking=_required(block, "thinking", where),
                    signature=_required(block, "signature", where),
                )
            )
        elif block["type"] == "redacted_thinking":
            blocks.append(RedactedThinkingBlock(data=_required(block, "data", where)))
        elif block["type"] == "text":
            blocks.append(TextBlock(text=block["text"]))
        elif block["type"] == "tool_use":
            blocks.append(ToolUseBlock(id=block["id"], name=block["name"], input=block["input"]))
        elif block["type"] == "tool_result":
            result = block.get("content", "")
            if isinstance(result, list):
                result = "\n".join(part.get("text", "") for part in result)
            blocks.append(
                ToolResultBlock(
                    tool_use_id=block["tool_use_id"],
                    content=result,
                    is_error=bool(block.get("is_error", False)),
                )
            )
        else:
            raise ValueError(f"content block type {block['type']!r} is not one Forge sends")
    return Message(role=message["role"], content=blocks)


def main(argv: list[str] | None = None) -> int:
    """`python -m tests.support.messages_server SCRIPT [--port N]`: serve a script until Ctrl-C.

    Point the Anthropic provider at it with ANTHROPIC_BASE_URL=<the printed URL> and any
    ANTHROPIC_API_KEY to run Forge with a scripted model over the real SDK and real HTTP.
    """
    import argparse
    import signal
    import threading

    parser = argparse.ArgumentParser(prog="python -m tests.support.messages_server")
    parser.add_argument("script", type=Path, help="a model script (YAML or JSON)")
    parser.add_argument("--port", type=int, default=0, help="default: a free port")
    args = parser.parse_args(argv)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with MessagesServer(Script.load(args.script), port=args.port) as server:
        print(f"Messages API at {server.base_url} (script {args.script})", flush=True)
        try:
            stop.wait()
        except KeyboardInterrupt:
            pass
        print(f"served {server.request_count} requests", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
