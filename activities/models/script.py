"""Model scripts: canned answers for the scripted provider and the local Messages API server.

One format serves both, so a test can run the same script through `ScriptedProvider` (no HTTP)
or through the real `anthropic` SDK against `tests/support/messages_server.py`:

```yaml
responses:
  - when: {consumer: planner, contains: "billing"}   # every given condition must hold
    times: 1                                         # uses; 0 = unlimited (default 1)
    response:
      content:
        - {type: thinking, thinking: "Plan first"}   # signature generated if absent
        - {type: text, text: "Here is the plan"}
        - {type: tool_use, name: write_file, input: {path: a.txt}}   # id generated if absent
      stop_reason: tool_use          # default: tool_use if any tool_use block, else end_turn
      usage: {input_tokens: 120, output_tokens: 30, cache_read_input_tokens: 0}
  - error: {status: 429, message: "slow down"}       # or {malformed: true}
```

Entries are tried in order; the first whose `when` matches and that has uses left answers.
`contains` is a substring of the whole request text (system prompt, every text block and every
tool result), `last_contains` of the last message only, `prompt_hash` is `prompt_hash(request)`
and `model` the binding ref (e.g. `anthropic:claude-opus-4-6`). `delay_s` delays the answer
(the test server sleeps; the scripted provider times out when it exceeds the request timeout).

Thinking blocks come back as the API sends them: `thinking` with a `signature` (when the entry
gives none, `thinking_signature(thinking)`, a digest of the text) and `redacted_thinking` with
its `data`. Providers keep them, so a tool loop sends them back with the assistant turn.

Usage not given in the script is approximated deterministically: input tokens are
len(request text) // 4 + 1 and output tokens len(answer text + thinking + tool inputs as JSON)
// 4 + 1 (the API bills thinking as output), cache tokens 0. That is about the size real
tokenizers give English text, which is all a budget test needs; it is never billed.
"""

from __future__ import annotations

import hashlib
import json
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

import yaml
from pydantic import Field, ValidationError, model_validator

from compiler.hashing import sha256_of
from schemas.base import FrozenModel
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.models import Consumer, Message, ModelRequest, ModelUsage, TextBlock, ToolResultBlock

__all__ = [
    "Script",
    "ScriptAnswer",
    "ScriptDocument",
    "ScriptEntry",
    "ScriptFailure",
    "ScriptReply",
    "ScriptUnmatched",
    "message_text",
    "prompt_hash",
    "request_text",
    "thinking_signature",
]

_LAST_MESSAGE_SHOWN = 200
_BLOCK_TYPES = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})


class ScriptUnmatched(ForgeError, LookupError):
    """No script entry (with uses left) answers a request."""

    code = ErrorCode.MODEL_SCRIPT_UNMATCHED


def prompt_hash(request: ModelRequest) -> str:
    """The gateway's prompt hash: sha256 over the RFC 8785 JSON of the whole request."""
    return sha256_of(request.model_dump(mode="json"))


def thinking_signature(thinking: str) -> str:
    """The signature a script answer gets for a thinking block whose entry gives none.

    A digest of the thinking text, so the test server can tell a block sent back unchanged
    from one that was edited, as the Messages API does with its own signatures.
    """
    digest = hashlib.sha256(b"forge-scripted-thinking\x00" + thinking.encode()).hexdigest()
    return f"sig_{digest[:48]}"


def message_text(message: Message) -> str:
    """The text of one message: its text blocks and tool results, one per line."""
    parts: list[str] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            parts.append(block.text)
        elif isinstance(block, ToolResultBlock):
            parts.append(block.content)
    return "\n".join(parts)


def request_text(request: ModelRequest) -> str:
    """The whole text of a request: the system prompt and every message, one per line."""
    return "\n".join([request.system, *(message_text(m) for m in request.messages)])


# ---- the script file format -----------------------------------------------------------------


class When(FrozenModel):
    """Conditions on a request; every one given must hold."""

    consumer: Consumer | None = None
    contains: str | None = None
    last_contains: str | None = None
    prompt_hash: str | None = Field(default=None, pattern=r"^sha256:[0-9a-f]{64}$")
    model: str | None = Field(default=None, description="binding ref, e.g. anthropic:claude-x")


class ScriptText(FrozenModel):
    type: Literal["text"]
    text: str


class ScriptToolUse(FrozenModel):
    type: Literal["tool_use"]
    id: str | None = None
    name: str = Field(pattern=r"^[a-zA-Z0-9_-]{1,64}$")
    input: dict[str, Any] = Field(default_factory=dict)


class ScriptThinking(FrozenModel):
    """A thinking block; providers keep it, with this signature (generated when absent)."""

    type: Literal["thinking"]
    thinking: str
    signature: str | None = None


class ScriptRedactedThinking(FrozenModel):
    type: Literal["redacted_thinking"]
    data: str = "scripted-redacted"


ScriptBlock = Annotated[
    ScriptText | ScriptToolUse | ScriptThinking | ScriptRedactedThinking,
    Field(discriminator="type"),
]


class ScriptUsage(FrozenModel):
    """Usage as the Messages API reports it; an input or output count left out is approximated."""

    input_tokens: int | None = Field(default=None, ge=0)
    output_tokens: int | None = Field(default=None, ge=0)
    cache_read_input_tokens: int = Field(default=0, ge=0)
    cache_creation_input_tokens: int = Field(default=0, ge=0)


class ScriptReply(FrozenModel):
    content: list[ScriptBlock] = Field(default_factory=list)
    # Free text, not StopReason: a script may send a stop reason the API never would, to test
    # that providers refuse it.
    stop_reason: str | None = None
    usage: ScriptUsage | None = None


class ScriptFailure(FrozenModel):
    """An HTTP error status, or (malformed) a 200 whose body is not a Messages response."""

    status: int | None = Field(default=None, ge=400, le=599)
    message: str | None = None
    malformed: bool = False
    body: str | None = Field(default=None, description="the malformed body; default truncated")

    @model_validator(mode="after")
    def _status_or_malformed(self) -> ScriptFailure:
        if self.malformed and self.status is not None:
            raise ValueError("give either status (an HTTP error) or malformed: true, not both")
        if not self.malformed and self.status is None:
            raise ValueError("an error needs status (e.g. 429, 500, 529) or malformed: true")
        if self.body is not None and not self.malformed:
            raise ValueError("body is only used with malformed: true")
        return self


class ScriptEntry(FrozenModel):
    when: When | None = None
    times: int = Field(default=1, ge=0, description="uses; 0 = unlimited")
    delay_s: float = Field(default=0.0, ge=0, le=60)
    response: ScriptReply | None = None
    error: ScriptFailure | None = None

    @model_validator(mode="after")
    def _one_answer(self) -> ScriptEntry:
        if (self.response is None) == (self.error is None):
            raise ValueError("an entry needs exactly one of `response` or `error`")
        return self


class ScriptDocument(FrozenModel):
    responses: list[ScriptEntry]


class ScriptAnswer(FrozenModel):
    """The answer of one entry to one request: a reply (ids and usage filled in) or a failure."""

    entry: int = Field(ge=0, description="index of the entry in the script")
    use: int = Field(ge=1, description="which use of the entry this is, from 1")
    content: list[ScriptBlock] = Field(default_factory=list)
    stop_reason: str = "end_turn"
    usage: ModelUsage = ModelUsage()
    failure: ScriptFailure | None = None
    delay_s: float = 0.0


# ---- the script -----------------------------------------------------------------------------


class Script:
    """A loaded script; `answer` is thread-safe (the test server answers from many threads)."""

    def __init__(self, document: ScriptDocument, *, source: str) -> None:
        self.document = document
        self.source = source
        self._used = [0] * len(document.responses)
        self._lock = threading.Lock()

    @classmethod
    def load(cls, path: Path) -> Script:
        """Read a YAML or JSON script file.

        Raises:
            ForgeError: MODEL_SCRIPT_INVALID, the file is missing, unparsable, or an entry is
                malformed (the message names the file, the entry index and the field).
        """
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ForgeError(
                f"model script {path} does not exist: point FORGE_MODEL_SCRIPT at a YAML or "
                "JSON file with a `responses:` list",
                code=ErrorCode.MODEL_SCRIPT_INVALID,
            ) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise ForgeError(
                f"model script {path} cannot be read: {exc}", code=ErrorCode.MODEL_SCRIPT_INVALID
            ) from None
        return cls.from_data(_parse(text, path), source=str(path))

    @classmethod
    def from_data(cls, data: Any, *, source: str = "<script data>") -> Script:
        """Build a script from already parsed data (a mapping with `responses`)."""
        if not isinstance(data, Mapping) or "responses" not in data:
            raise ForgeError(
                f"model script {source}: the document must be a mapping with a `responses:` "
                f"list of entries, got {type(data).__name__}",
                code=ErrorCode.MODEL_SCRIPT_INVALID,
            )
        try:
            document = ScriptDocument.model_validate(data)
        except ValidationError as exc:
            raise ForgeError(_describe(exc, source), code=ErrorCode.MODEL_SCRIPT_INVALID) from None
        return cls(document, source=source)

    def answer(self, request: ModelRequest, *, known_hash: str | None = None) -> ScriptAnswer:
        """The answer of the first matching entry with uses left; that use is spent.

        Args:
            request: The request to answer.
            known_hash: The request's prompt hash when the caller knows it better than the
                request does (the test server rebuilds requests from the wire, which loses
                fields such as timeout_s); computed from `request` otherwise.

        Raises:
            ScriptUnmatched: No entry matches, or every matching entry is used up.
        """
        digest = known_hash or prompt_hash(request)
        text, last = request_text(request), message_text(request.messages[-1])
        with self._lock:
            used_up = 0
            for index, entry in enumerate(self.document.responses):
                if not _matches(entry.when, request, digest, text, last):
                    continue
                if entry.times and self._used[index] >= entry.times:
                    used_up += 1
                    continue
                self._used[index] += 1
                return _answer(entry, index, self._used[index], request, digest, text)
        raise ScriptUnmatched(self._unmatched(request, digest, last, used_up))

    def remaining(self) -> list[int | None]:
        """Uses left per entry, in script order (None: unlimited)."""
        with self._lock:
            return [
                None if e.times == 0 else e.times - used
                for e, used in zip(self.document.responses, self._used, strict=True)
            ]

    def _unmatched(self, request: ModelRequest, digest: str, last: str, used_up: int) -> str:
        shown = last[:_LAST_MESSAGE_SHOWN] + ("..." if len(last) > _LAST_MESSAGE_SHOWN else "")
        spent = f" ({used_up} matching entries are used up)" if used_up else ""
        return (
            f"model script {self.source} has no entry for the {request.consumer} call to "
            f"{request.model} (prompt {digest}){spent}; its last message begins: {shown!r}. "
            "Add an entry whose `when` matches this request, or raise `times` (0 = unlimited)"
        )


def _parse(text: str, path: Path) -> Any:
    if path.suffix.lower() == ".json":
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise ForgeError(
                f"model script {path}: invalid JSON at line {exc.lineno}, column {exc.colno}: "
                f"{exc.msg}",
                code=ErrorCode.MODEL_SCRIPT_INVALID,
            ) from None
    try:
        return yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown line"
        raise ForgeError(
            f"model script {path}: invalid YAML at {where}: {exc.problem}",
            code=ErrorCode.MODEL_SCRIPT_INVALID,
        ) from None
    except yaml.YAMLError as exc:
        raise ForgeError(
            f"model script {path}: invalid YAML: {exc}", code=ErrorCode.MODEL_SCRIPT_INVALID
        ) from None


def _describe(exc: ValidationError, source: str) -> str:
    problems = []
    for err in exc.errors():
        loc = list(err["loc"])
        if len(loc) >= 2 and loc[0] == "responses" and isinstance(loc[1], int):
            field = _field_path(loc[2:]) or "(entry)"
            problems.append(f"entry {loc[1]} ({field}): {err['msg']}")
        else:
            problems.append(f"{'.'.join(str(x) for x in loc) or '(document)'}: {err['msg']}")
    return (
        f"model script {source} is invalid: "
        + "; ".join(problems)
        + ". Entries count from 0; see activities/models/script.py for the format"
    )


def _field_path(loc: list[int | str]) -> str:
    """`response.content.0.text`: without the block-type tag pydantic puts after an index."""
    kept = [
        str(part)
        for i, part in enumerate(loc)
        if not (0 < i < len(loc) - 1 and isinstance(loc[i - 1], int) and part in _BLOCK_TYPES)
    ]
    return ".".join(kept)


def _matches(when: When | None, request: ModelRequest, digest: str, text: str, last: str) -> bool:
    if when is None:
        return True
    return (
        (when.consumer is None or when.consumer == request.consumer)
        and (when.model is None or when.model == request.model)
        and (when.prompt_hash is None or when.prompt_hash == digest)
        and (when.contains is None or when.contains in text)
        and (when.last_contains is None or when.last_contains in last)
    )


def _answer(
    entry: ScriptEntry, index: int, use: int, request: ModelRequest, digest: str, text: str
) -> ScriptAnswer:
    if entry.error is not None:
        return ScriptAnswer(entry=index, use=use, failure=entry.error, delay_s=entry.delay_s)
    reply = entry.response
    assert reply is not None  # the entry validator holds exactly one of error/response
    content: list[ScriptBlock] = []
    for position, block in enumerate(reply.content):
        if isinstance(block, ScriptToolUse) and block.id is None:
            seed = f"{digest}|{index}|{use}|{position}".encode()
            block = block.model_copy(
                update={"id": "toolu_" + hashlib.sha256(seed).hexdigest()[:24]}
            )
        elif isinstance(block, ScriptThinking) and block.signature is None:
            block = block.model_copy(update={"signature": thinking_signature(block.thinking)})
        content.append(block)
    has_tool_use = any(isinstance(b, ScriptToolUse) for b in content)
    stop_reason = reply.stop_reason or ("tool_use" if has_tool_use else "end_turn")
    return ScriptAnswer(
        entry=index,
        use=use,
        content=content,
        stop_reason=stop_reason,
        usage=_usage(reply.usage, text, content),
        delay_s=entry.delay_s,
    )


def _usage(given: ScriptUsage | None, text: str, content: list[ScriptBlock]) -> ModelUsage:
    said = []
    for block in content:
        if isinstance(block, ScriptText):
            said.append(block.text)
        elif isinstance(block, ScriptThinking):
            said.append(block.thinking)
        elif isinstance(block, ScriptToolUse):
            said.append(json.dumps(block.input, sort_keys=True))
    given = given or ScriptUsage()
    return ModelUsage(
        input_tokens=len(text) // 4 + 1 if given.input_tokens is None else given.input_tokens,
        output_tokens=(
            len("".join(said)) // 4 + 1 if given.output_tokens is None else given.output_tokens
        ),
        cache_read_tokens=given.cache_read_input_tokens,
        cache_creation_tokens=given.cache_creation_input_tokens,
    )
