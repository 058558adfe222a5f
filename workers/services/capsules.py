"""Extracting a run into a capsule, importing one, diffing two versions: the CLI's and the API's.

The run's events say how it ended, which attempt of each step was accepted, under which
contract, what its receipts were and which programs it ran; compiler/capsule/extract.py decides
from them. The new version goes to the capsule store and a capsule.extracted.v1 event records it.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from pydantic import ValidationError

from activities.store.artifacts import ArtifactStore
from activities.store.capsule_bundle import import_capsule
from activities.store.capsules import CapsuleStore
from activities.store.errors import StoreError
from activities.store.events import EventStore
from compiler.capsule.diff import diff_capsules
from compiler.capsule.extract import RunRecord, StepRun, extract
from compiler.typesystem.library import TypeLibrary
from schemas.artifacts import ArtifactRef
from schemas.capsule import (
    CAPSULE_EXTRACTED,
    CAPSULE_IMPORTED,
    CapsuleDiff,
    CapsuleRecorded,
    CapsuleVersion,
    CodeCell,
)
from schemas.compiled import CompiledPlan
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.event_catalogue import (
    RUN_CANCELLED,
    RUN_COMPILED,
    RUN_COMPLETED,
    RUN_FAILED,
    RUN_STARTED,
    STEP_COMPLETED,
    STEP_REUSED,
    TOOL_CALLED,
    payload_of,
    read_payload,
)
from schemas.event_ids import capsule_stream, event_id
from schemas.events import Event, EventDraft
from schemas.plan import ScalarType
from schemas.receipts import Receipt
from schemas.run_events import RunCompiled, RunStarted
from schemas.scope import Scope
from schemas.step_events import StepCompleted, StepReused, StepStarted

MAX_DOCUMENT_BYTES = 64 * 1024 * 1024
MAX_CODE_BYTES = 8 * 1024 * 1024  # one program, read to diff it
MAX_EXPORT_BYTES = 1 << 30  # an export: every blob base64-encoded, at most 32 MiB each
_OUTCOMES = {RUN_COMPLETED: "completed", RUN_FAILED: "failed", RUN_CANCELLED: "cancelled"}


@dataclass(frozen=True)
class CapsuleServices:
    """The stores extraction reads and writes."""

    events: EventStore
    artifacts: ArtifactStore
    capsules: CapsuleStore
    library: TypeLibrary


def extract_run(
    services: CapsuleServices,
    scope: Scope,
    run_id: str,
    name: str,
    *,
    structural: Sequence[str] = (),
    params: Mapping[str, ScalarType] | None = None,
) -> CapsuleVersion:
    """RUN as a version of capsule NAME (the existing version when the content is the same).

    Raises:
        ForgeError: CAPSULE_REFUSED, the run is not the tenant's, did not complete, or cannot be
            extracted for a reason the message names.
    """
    events = services.events.list_events(run_id=run_id, tenant_id=scope.tenant, limit=1_000_000)
    started = [e for e in events if e.type == RUN_STARTED]
    if not started or started[0].scope.tenant != scope.tenant:
        raise ForgeError(
            f"no run {run_id!r} for tenant {scope.tenant!r}: check the run id with `forge runs`",
            code=ErrorCode.CAPSULE_REFUSED,
        )
    plan, plan_ref = _compiled_plan(services, scope, run_id, events)
    record = _record(services, scope, run_id, events, started[0])
    validators = {k: v.parse_validator for k, v in services.library.kinds.items()}
    content = extract(
        plan, plan_ref, record, validators=validators, structural=structural, params=params
    )
    version = services.capsules.add(scope, name, content, actor=scope.actor.id)
    completed = next(e.event_id for e in events if e.type == RUN_COMPLETED)
    record_version(services.events, scope, version, CAPSULE_EXTRACTED, caused_by=completed)
    return version


def import_version(
    capsules: CapsuleStore,
    artifacts: ArtifactStore,
    events: EventStore,
    scope: Scope,
    data: bytes,
    *,
    source: str,
) -> CapsuleVersion:
    """Import an export (every hash checked before anything is stored) and record it.

    Raises:
        CapsuleImportRefused: the file is not an intact export (activities/store/capsule_bundle).
    """
    version = import_capsule(capsules, artifacts, scope, data, actor=scope.actor.id, source=source)
    record_version(events, scope, version, CAPSULE_IMPORTED)
    return version


def diff_versions(
    artifacts: ArtifactStore, scope: Scope, first: CapsuleVersion, second: CapsuleVersion
) -> CapsuleDiff:
    """What changed between two versions, their programs read from the tenant's store."""

    def code_of(sha256: str) -> str:
        return artifacts.read_bytes(scope, sha256, MAX_CODE_BYTES).decode("utf-8", "replace")

    return diff_capsules(first, second, code_of)


def record_version(
    events: EventStore,
    scope: Scope,
    version: CapsuleVersion,
    type_: str,
    *,
    caused_by: str | None = None,
) -> None:
    """The event of a version just added; a no-op records nothing.

    capsule.extracted.v1 is caused by the source run's completion; capsule.imported.v1 is a root.
    """
    if not version.created:
        return
    payload = CapsuleRecorded(
        name=version.name,
        version=version.version,
        capsule_hash=version.capsule_hash,
        source_run_id=version.content.provenance.source_run_id,
        created=True,
    )
    draft = EventDraft(
        event_id=event_id("-", type_, scope.tenant, version.name, f"v{version.version}"),
        type=type_,
        scope=scope,
        run_id=None,
        caused_by=caused_by,
        timestamp=datetime.now(UTC),
        payload=payload_of(type_, payload),
    )
    events.append([draft], stream_id=capsule_stream(scope.tenant, version.name))


def _compiled_plan(
    services: CapsuleServices, scope: Scope, run_id: str, events: list[Event]
) -> tuple[CompiledPlan, ArtifactRef]:
    for e in events:
        if e.type != RUN_COMPILED:
            continue
        compiled = read_payload(e.type, e.payload)
        if isinstance(compiled, RunCompiled) and compiled.compiled_ref is not None:
            ref = compiled.compiled_ref
            data = services.artifacts.read_bytes(scope, ref.sha256, MAX_DOCUMENT_BYTES)
            return CompiledPlan.model_validate_json(data), ref
    raise ForgeError(
        f"run {run_id} has no recorded compiled plan (it never compiled, or ran on a Forge "
        "before capsules): run its plan again and extract that run",
        code=ErrorCode.CAPSULE_REFUSED,
    )


def _record(
    services: CapsuleServices, scope: Scope, run_id: str, events: list[Event], root: Event
) -> RunRecord:
    started = read_payload(root.type, root.payload)
    assert isinstance(started, RunStarted)
    outcome = next((_OUTCOMES[e.type] for e in events if e.type in _OUTCOMES), "running")
    contracts: dict[tuple[str, int, int], str] = {}
    accepted: dict[str, StepCompleted] = {}
    reused: dict[str, str] = {}
    for e in events:
        payload = read_payload(e.type, e.payload)
        if isinstance(payload, StepStarted):
            contracts[(payload.step_key, payload.iteration, payload.attempt)] = (
                payload.contract_hash
            )
        elif isinstance(payload, StepCompleted) and e.type == STEP_COMPLETED:
            old = accepted.get(payload.step_key)
            if old is None or payload.iteration >= old.iteration:
                accepted[payload.step_key] = payload
        elif isinstance(payload, StepReused) and e.type == STEP_REUSED:
            reused[payload.step_key] = payload.from_run or "an earlier run"
    steps = {}
    for key, done in accepted.items():
        steps[key] = StepRun(
            step_key=key,
            attempt=done.attempt,
            contract_hash=contracts.get((key, done.iteration, done.attempt), ""),
            preflight_ref=done.preflight_ref,
            postflight_ref=done.postflight_ref,
            preflight=_receipt(services, scope, done.preflight_ref),
            postflight=_receipt(services, scope, done.postflight_ref),
            cells=_cells(events, done),
            params_read=list(done.params_read),
            evaluates=_evaluates(events, done),
        )
    return RunRecord(
        run_id=run_id,
        outcome=outcome,
        objective=started.objective,
        params=dict(started.params),
        steps=steps,
        reused=reused,
    )


def _receipt(services: CapsuleServices, scope: Scope, ref: ArtifactRef) -> Receipt:
    try:
        return Receipt.model_validate_json(
            services.artifacts.read_bytes(scope, ref.sha256, MAX_DOCUMENT_BYTES)
        )
    except (StoreError, ValidationError) as exc:
        raise ForgeError(
            f"the receipt {ref.path} ({ref.sha256}) cannot be read ({exc}): the run's evidence "
            "is incomplete; run its plan again and extract that run",
            code=ErrorCode.CAPSULE_REFUSED,
        ) from None


def _cells(events: list[Event], done: StepCompleted) -> list[CodeCell]:
    """The programs of the accepted attempt, in turn order (Code-Act turns or replayed ones)."""
    cells: dict[int, CodeCell] = {}
    for e in events:
        if e.type != TOOL_CALLED:
            continue
        called: Any = read_payload(e.type, e.payload)
        if (
            called.step_key != done.step_key
            or called.tool != "sandbox.session"
            or called.channel != "executor"
            or called.attempt != done.attempt
            or called.iteration != done.iteration
        ):
            continue
        detail = called.detail
        if not isinstance(detail.get("code_ref"), dict) or not isinstance(detail.get("turn"), int):
            continue
        exit_code = detail.get("exit_code")
        cells[detail["turn"]] = CodeCell(
            turn=detail["turn"],
            code=ArtifactRef.model_validate(detail["code_ref"]),
            exit_code=exit_code if isinstance(exit_code, int) else None,
            verified=bool(called.ok),
        )
    return [cells[t] for t in sorted(cells)]


def _evaluates(events: list[Event], done: StepCompleted) -> bool:
    """Whether the accepted attempt's code asked the governed evaluator (a bridge call)."""
    for e in events:
        if e.type != TOOL_CALLED:
            continue
        called: Any = read_payload(e.type, e.payload)
        if (
            called.step_key == done.step_key
            and called.tool == "artifact.evaluate"
            and called.channel == "bridge"
            and called.attempt == done.attempt
        ):
            return True
    return False
