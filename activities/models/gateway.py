"""The model gateway: every model call goes through here to be stored, accounted and replayable.

One call = the prompt stored once by its hash, the provider asked (at most once per call key),
the response stored as an artifact, and one model.called.v1 event (usage, cost, latency) in the
scope's stream; a failed call leaves a model.failed.v1 event instead.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime

from activities import telemetry_metrics
from activities.cancellation import interruptible
from activities.models.base import ModelError, Provider
from activities.models.masking import finding_draft, masked
from activities.models.prompts import PromptStore
from activities.store.artifacts import ArtifactStore
from activities.store.errors import ConflictError
from activities.store.events import EventStore
from activities.telemetry_content import note_model_input, note_model_output
from activities.telemetry_spans import model_span, note_failure, note_model_response
from compiler.budget import cost_of
from compiler.hashing import canonical_json
from schemas import names
from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel
from schemas.budget import MODEL_CALLED, ModelCalled, PriceTable, Usage
from schemas.context import CompiledContext
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import MODEL_FAILED, payload_of
from schemas.event_ids import event_id as make_event_id
from schemas.event_ids import guard_stream
from schemas.events import Event, EventDraft
from schemas.models import CallScope, ModelCallResult, ModelRequest, ModelResponse
from schemas.step_events import ModelFailed

__all__ = [
    "MODEL_FAILED",
    "RESPONSE_MAX_BYTES",
    "LedgerReplayError",
    "ModelGateway",
    "model_event_id",
]

RESPONSE_MAX_BYTES = 16 * 1024 * 1024


class LedgerReplayError(ForgeError, RuntimeError):
    """A recorded model call cannot be replayed (its stored response is missing or unreadable)."""

    code = ErrorCode.MODEL_LEDGER_REPLAY


def _api_name(binding_ref: str) -> str:
    """The model's own name in a binding ref ("anthropic:claude-x" -> "claude-x")."""
    return binding_ref.split(":", 1)[1] if ":" in binding_ref else binding_ref


def model_event_id(event_type: str, scope: CallScope, *parts: str) -> str:
    """`<run>:<type>:<step>:<iteration>:<attempt>:<call_key>[:<part>...]` (schemas.event_ids)."""
    return make_event_id(
        scope.run_id or "-",
        event_type,
        scope.step_key or "-",
        str(scope.iteration),
        str(scope.attempt),
        scope.call_key,
        *parts,
    )


class ModelGateway:
    """Routes each request to the provider of its binding ref and records the call.

    `providers` maps a binding ref's prefix (the part before ':') to its provider; `fallback`
    answers refs no provider claims (a ScriptedProvider standing in for every binding).

    Replay: a call whose `scope.call_key` already has a model.called.v1 event for the same
    prompt hash in `scope.stream_id` is answered from the stored response, without a provider
    call or a new event, so a retried activity never pays twice. `scope.attempt` is the step's
    attempt (as the usage ledger counts it), not Temporal's activity attempt.

    `record_content` (FORGE_TELEMETRY_CONTENT=masked): each call's span carries its prompt and
    response, masked then cut (activities/telemetry_content.py); off, none.
    """

    def __init__(
        self,
        events: EventStore,
        artifacts: ArtifactStore,
        prices: PriceTable,
        providers: Mapping[str, Provider],
        *,
        fallback: Provider | None = None,
        record_content: bool = False,
    ) -> None:
        self._events = events
        self._record_content = record_content
        self._artifacts = artifacts
        self._prices = prices
        self._providers = dict(providers)
        self._fallback = fallback
        self._prompts = PromptStore(artifacts)

    @property
    def prompts(self) -> PromptStore:
        return self._prompts

    def providers_served(self, known: Iterable[str]) -> frozenset[str]:
        """The providers (binding-ref prefixes) this gateway answers, of those `known` to it.

        A real provider answers its own prefix; a fallback (a script) answers every one.
        """
        served = set(self._providers)
        if self._fallback is not None:
            served |= {*known, names.UNPREFIXED_PROVIDER}
        return frozenset(served)

    def provider_for(self, binding_ref: str) -> Provider:
        """The provider that answers `binding_ref`.

        Raises:
            ModelError: MODEL_UNAVAILABLE when no provider claims the ref and there is no
                fallback.
        """
        prefix = binding_ref.split(":", 1)[0] if ":" in binding_ref else None
        provider = self._providers.get(prefix) if prefix else None
        if provider is not None:
            return provider
        if self._fallback is not None:
            return self._fallback
        raise ModelError(
            ErrorCode.MODEL_UNAVAILABLE,
            f"no model provider for {binding_ref}: set ANTHROPIC_API_KEY, or FORGE_MODEL_SCRIPT "
            "to a script file",
        )

    def call(
        self, request: ModelRequest, scope: CallScope, *, context: CompiledContext | None = None
    ) -> ModelCallResult:
        """Answer `request` (from the log when already answered) and record the call.

        `context`, the compiled context the prompt came from, is recorded with the call (its
        hash and each stage's); it is not part of the prompt's digest.

        Raises:
            ModelError: The provider failed (a model.failed.v1 event is recorded first), or
                the scope's call key at this iteration and attempt already answered a
                different prompt (MODEL_REQUEST_INVALID, nothing is called).
            ValueError: The scope has no caused_by (events must name their cause).
            LedgerReplayError: The recorded answer cannot be read back.
        """
        if scope.caused_by is None:
            raise ValueError(
                f"model call {scope.call_key!r} in stream {scope.stream_id!r} has no "
                "caused_by: set CallScope.caused_by to the event that caused the call (e.g. "
                "the step's started event), so its model.called.v1 event can be written"
            )
        request, sent = masked(request, "/request")  # no credential reaches a provider
        digest, _ = self._prompts.put(scope.scope, request)
        stream = self._events.read_stream(scope.stream_id, tenant_id=scope.scope.tenant)
        answered = _answered(stream, scope.call_key, digest)
        if answered is not None:
            return self._replay(scope, answered, digest)
        event_id = model_event_id(MODEL_CALLED, scope)
        _refuse_reused_key(stream, event_id, digest, scope)
        prefix = request.model.split(":", 1)[0] if ":" in request.model else "unknown"
        with model_span(_api_name(request.model), prefix, request.consumer, scope) as span:
            if self._record_content:
                note_model_input(span, request)  # masked above, and again with each part's cut
            try:
                provider = self.provider_for(request.model)
                started = time.monotonic()
                response = interruptible(provider.complete, request)  # a cancel stops the wait
            except ModelError as exc:
                note_failure(span, exc.failure_class, exc.message)
                self._record_failure(request, scope, digest, exc, stream)
                raise
            note_model_response(span, response)
            if self._record_content:
                note_model_output(span, response)
        latency_ms = max(0, round((time.monotonic() - started) * 1000))
        answer = response
        response, got = masked(response, "/response")  # nor is one recorded
        if sent or got:
            guard = finding_draft(scope, event_id, sent + got)
            self._events.append([guard], stream_id=guard_stream(scope.scope.tenant))
        result = self._record(
            request, scope, digest, event_id, response, latency_ms, context, provider
        )
        if got and not result.replayed:  # the answer of record is this call's own
            return result.model_copy(update={"verbatim": answer})
        return result

    # ---- recording -----------------------------------------------------------------------

    def _record(
        self,
        request: ModelRequest,
        scope: CallScope,
        digest: str,
        event_id: str,
        response: ModelResponse,
        latency_ms: int,
        context: CompiledContext | None,
        provider: Provider,
    ) -> ModelCallResult:
        ref = self._artifacts.put_bytes(
            scope.scope,
            canonical_json(response.model_dump(mode="json")),
            logical_path=f"responses/{digest.removeprefix('sha256:')}.json",
            media_type="application/json",
        )
        usage = response.usage
        spent = Usage(
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_creation_tokens=usage.cache_creation_tokens,
        )
        billed = getattr(provider, "billed", True)  # a provider that does not say is priced
        cost = cost_of(request.model, spent, self._prices) if billed else 0.0
        payload = ModelCalled(
            step_key=scope.step_key,
            attempt=scope.attempt,
            model=request.model,
            provider=provider.name,
            provider_model=response.model,
            input_tokens=usage.input_tokens,
            output_tokens=usage.output_tokens,
            cache_read_tokens=usage.cache_read_tokens,
            cache_creation_tokens=usage.cache_creation_tokens,
            cost_usd=cost or 0.0,
            latency_ms=latency_ms,
            prompt_hash=digest,
            iteration=scope.iteration,
            consumer=request.consumer,
            call_key=scope.call_key,
            stop_reason=response.stop_reason,
            response_ref=ref.model_dump(mode="json"),
            cost_known=cost is not None,
            context_hash=context.context_hash if context else None,
            stage_hashes=dict(context.stage_hashes) if context else None,
        )
        try:
            self._append(scope, event_id, MODEL_CALLED, digest, payload)
        except ConflictError:
            # A concurrent call with the same key recorded its answer first: that one is the
            # answer of record, so every caller sees the same response.
            answered = _answered(
                self._events.read_stream(scope.stream_id, tenant_id=scope.scope.tenant),
                scope.call_key,
                digest,
            )
            if answered is None:
                raise
            return self._replay(scope, answered, digest)
        telemetry_metrics.model_called(
            scope.scope.tenant, request.model, usage.input_tokens, usage.output_tokens, cost
        )
        return ModelCallResult(
            response=response,
            model_call_id=event_id,
            prompt_hash=digest,
            cost_usd=cost,
            latency_ms=latency_ms,
        )

    def _record_failure(
        self,
        request: ModelRequest,
        scope: CallScope,
        digest: str,
        exc: ModelError,
        stream: list[Event],
    ) -> None:
        same_call = [
            e
            for e in stream
            if e.type == MODEL_FAILED
            and e.payload.get("call_key") == scope.call_key
            and e.payload.get("attempt") == scope.attempt
            and e.payload.get("iteration") == scope.iteration
        ]
        # Each failure is its own event: a call may fail several times before it succeeds.
        event_id = model_event_id(MODEL_FAILED, scope, str(len(same_call) + 1))
        payload = ModelFailed(
            failure_class=exc.failure_class,
            retryable=exc.retryable,
            message=exc.message,
            model=request.model,
            consumer=request.consumer,
            call_key=scope.call_key,
            step_key=scope.step_key,
            attempt=scope.attempt,
            iteration=scope.iteration,
            prompt_hash=digest,
        )
        self._append(scope, event_id, MODEL_FAILED, digest, payload)

    def _append(
        self, scope: CallScope, event_id: str, type_: str, digest: str, payload: FrozenModel
    ) -> None:
        draft = EventDraft(
            event_id=event_id,
            type=type_,
            scope=scope.scope,
            run_id=scope.run_id,
            caused_by=scope.caused_by,
            timestamp=datetime.now(UTC),
            prompt_hash=digest,
            payload=payload_of(type_, payload),
        )
        self._events.append([draft], stream_id=scope.stream_id)

    # ---- replay --------------------------------------------------------------------------

    def _replay(self, scope: CallScope, event: Event, digest: str) -> ModelCallResult:
        call = ModelCalled.model_validate(event.payload)
        if call.response_ref is None:
            raise LedgerReplayError(
                f"model call {event.event_id} was recorded without its response, so it cannot "
                "be replayed; give the call a new call_key to ask the model again"
            )
        ref = ArtifactRef.model_validate(call.response_ref)
        try:
            data = self._artifacts.read_bytes(scope.scope, ref.sha256, RESPONSE_MAX_BYTES)
            response = ModelResponse.model_validate_json(data)
        except (LookupError, OSError, ValueError) as exc:
            raise LedgerReplayError(
                f"the recorded response {ref.sha256} of model call {event.event_id} cannot be "
                f"read back ({exc}); check the artifact store, or give the call a new call_key "
                "to ask the model again"
            ) from None
        return ModelCallResult(
            response=response,
            model_call_id=event.event_id,
            prompt_hash=digest,
            cost_usd=call.cost_usd if call.cost_known else None,
            latency_ms=call.latency_ms,
            replayed=True,
        )


def _answered(stream: list[Event], call_key: str, digest: str) -> Event | None:
    """The latest model.called.v1 of `call_key` for this prompt in the stream, if any."""
    for event in reversed(stream):
        if (
            event.type == MODEL_CALLED
            and event.payload.get("call_key") == call_key
            and event.payload.get("prompt_hash") == digest
        ):
            return event
    return None


def _refuse_reused_key(stream: list[Event], event_id: str, digest: str, scope: CallScope) -> None:
    for event in stream:
        if event.event_id == event_id:
            raise ModelError(
                ErrorCode.MODEL_REQUEST_INVALID,
                f"call_key {scope.call_key!r} (iteration {scope.iteration}, attempt "
                f"{scope.attempt}) in stream {scope.stream_id!r} already answered another "
                f"prompt ({event.payload.get('prompt_hash')}, now {digest}); give each "
                "distinct request its own call_key, e.g. with the turn number in it",
            )
