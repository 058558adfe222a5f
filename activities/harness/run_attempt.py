"""The nine harness steps of one attempt, with their receipts, events and provenance."""

from activities.harness import checks
from activities.harness.attempt import StepAttempt, StepServices
from activities.harness.executors import check_evaluations, run_executor
from activities.harness.failure import StepFailure
from activities.harness.ledger import AttemptLog, ledger_usages
from activities.harness.params import params_read, write_params
from activities.harness.receipts import receipt_summary
from activities.harness.receipts_masking import mask_receipt, record_receipt_masking
from activities.harness.workspace import (
    materialize_inputs,
    persist_outputs,
    prepare_workspace,
    read_note,
    write_iteration,
)
from activities.telemetry_spans import step_ids
from compiler.budget import step_overrun
from schemas.artifacts import ArtifactRef, Provenance
from schemas.budget import Usage
from schemas.error_codes import ErrorCode
from schemas.event_catalogue import (
    ARTIFACT_PUBLISHED,
    STEP_COMPLETED,
    STEP_RECEIPT_POSTFLIGHT,
    STEP_RECEIPT_PREFLIGHT,
)
from schemas.events import Event, EventDraft
from schemas.guard import GUARD_FOUND, CredentialsFound, GuardPhase
from schemas.profile import MODEL_BACKENDS
from schemas.receipts import Receipt
from schemas.run import StepExecuteResult
from schemas.step_events import ArtifactPublished, StepCompleted, StepReceipt

MAX_FINDINGS = 100  # listed in one guard.found.v1; `more` counts the rest


def run_attempt(attempt: StepAttempt, services: StepServices, log: AttemptLog) -> StepExecuteResult:
    """Workspace, inputs, preflight, executor, postflight, outputs: the attempt's completion.

    A failed harness step raises StepFailure; the events still buffered in `log` then go out
    with the failure. Spans recorded within carry the attempt's forge.* ids.
    """
    inp = attempt.inp
    with step_ids(inp.scope.tenant, inp.run_id, inp.step_key, attempt.number):
        return _run_attempt(attempt, services, log)


def _run_attempt(
    attempt: StepAttempt, services: StepServices, log: AttemptLog
) -> StepExecuteResult:
    step, workspace = attempt.step, attempt.workspace
    pre, pre_ref = _prepare(attempt, services, log)
    code = run_executor(attempt, services, pre, log)
    # The step's stream is complete once the executor exited: one view for both checks.
    ledger = log.stream()
    check_evaluations(attempt, ledger)
    usage = _within_budget(attempt, ledger)
    note = read_note(workspace)
    read = params_read(workspace, [p.name for p in attempt.plan.parameters])
    checks.check_undeclared_writes(workspace, step, pre)
    post = checks.postflight(workspace, step)
    post, post_ref, post_draft = _receipt(attempt, services, post, STEP_RECEIPT_POSTFLIGHT)
    log.buffer(post_draft)
    checks.verify_outputs(post, step)
    checks.verify_skill_output(workspace, step)
    # Before anything of the outputs is stored: a blocked output is never published.
    _guard(attempt, log, post, "step_output", caused_by=post_draft.event_id)
    outputs = persist_outputs(workspace, step, services.artifacts, scope=attempt.inp.scope)
    code_ref = _store_code(attempt, services, code) if code is not None else None
    summary = receipt_summary(post)
    completed = attempt.draft(
        STEP_COMPLETED,
        "done",
        StepCompleted(
            step_key=step.step_key,
            attempt=attempt.number,
            outputs=outputs,
            preflight_ref=pre_ref,
            postflight_ref=post_ref,
            receipt=summary,
            note=note,
            **({"code_ref": code_ref} if code_ref else {}),  # stored only for model-written code
            **({"params_read": read} if read else {}),
        ),
        caused_by=post_draft.event_id,
    )
    # The outputs are published in the transaction that records the completion: never one
    # without the other.
    log.flush_published(
        _publications(attempt, outputs, code_ref),
        lambda published: [
            *(
                _published_event(attempt, ref, p.version, caused_by=post_draft.event_id)
                for ref, p in zip(outputs, published, strict=True)
            ),
            completed,
        ],
    )
    return StepExecuteResult(
        step_key=step.step_key,
        attempt=attempt.number,
        outputs=outputs,
        preflight_ref=pre_ref,
        postflight_ref=post_ref,
        receipt_summary=summary,
        completed_event_id=completed.event_id,
        usage=usage,
        iteration=attempt.iteration,
        note=note,
    )


def _prepare(
    attempt: StepAttempt, services: StepServices, log: AttemptLog
) -> tuple[Receipt, ArtifactRef]:
    """Workspace, inputs and the preflight receipt (its event flushed), inputs verified."""
    workspace = attempt.workspace
    prepare_workspace(workspace)
    write_iteration(workspace, attempt.iteration)
    # The run's parameters, typed, for forge_bridge.param (written before any step code runs).
    write_params(workspace, attempt.params)
    materialize_inputs(
        workspace, attempt.step, attempt.inp.inputs, services.artifacts, scope=attempt.inp.scope
    )
    pre = checks.preflight(workspace, attempt.step)
    pre, pre_ref, pre_draft = _receipt(attempt, services, pre, STEP_RECEIPT_PREFLIGHT)
    if attempt.step.backend in MODEL_BACKENDS:
        log.flush(pre_draft)
        log.share()  # its model calls append to the stream from the first turn
    else:
        # Step code reaches the stream only through the bridge, whose ledger writes the start
        # before its first use; otherwise the start goes with the end (or alone, if it is slow).
        log.flush_later(pre_draft)
    checks.verify_inputs(pre, attempt.step)
    _guard(attempt, log, pre, "step_input", caused_by=pre_draft.event_id)
    return pre, pre_ref


def _guard(
    attempt: StepAttempt, log: AttemptLog, receipt: Receipt, phase: GuardPhase, *, caused_by: str
) -> None:
    """The profile's guard phase over the receipt's files: a report goes out with the attempt."""
    found = checks.guard_files(attempt.workspace, attempt.step, attempt.profile, receipt, phase)
    if found:
        shown = found[:MAX_FINDINGS]
        payload = CredentialsFound(
            step_key=attempt.inp.step_key,
            attempt=attempt.number,
            phase=phase,
            findings=shown,
            more=len(found) - len(shown),
        )
        log.buffer(
            attempt.draft(GUARD_FOUND, f"{phase}.{attempt.number}", payload, caused_by=caused_by)
        )


def _within_budget(attempt: StepAttempt, ledger: list[Event]) -> Usage:
    """The step's usage over every attempt; an attempt over its own budget fails."""
    usage, this_attempt = ledger_usages(ledger, attempt.inp, None, attempt.number)
    contract = attempt.packet.execution_contract
    overrun = step_overrun(
        this_attempt,
        tool_budget=contract.tool_budget,
        bridge_call_budget=contract.bridge_call_budget,
    )
    if overrun is not None:
        raise StepFailure(ErrorCode.BUDGET_EXHAUSTED, f"step {attempt.step.step_key}: {overrun}")
    return usage


def _receipt(
    attempt: StepAttempt, services: StepServices, receipt: Receipt, type_: str
) -> tuple[Receipt, ArtifactRef, EventDraft]:
    """The receipt with credentials masked (a guard event), stored, and the event naming it.

    The checks and the executor read the masked receipt: masking leaves paths, sizes, hashes
    and verdicts as they were (receipts_masking.py).
    """
    receipt, masked = mask_receipt(receipt)
    ref = _store_receipt(attempt, services, receipt)
    draft = attempt.draft(
        type_,
        str(attempt.number),
        StepReceipt(
            step_key=attempt.inp.step_key,
            attempt=attempt.number,
            receipt_ref=ref,
            files=receipt_summary(receipt),
        ),
        caused_by=attempt.started,
    )
    record_receipt_masking(services.events, attempt.stream_id, draft, masked)
    return receipt, ref, draft


def _store_receipt(attempt: StepAttempt, services: StepServices, receipt: Receipt) -> ArtifactRef:
    return services.artifacts.put_bytes(
        attempt.inp.scope,
        receipt.model_dump_json(indent=2).encode("utf-8"),
        logical_path=attempt.receipt_path(receipt.phase),
        media_type="application/json",
    )


def _store_code(attempt: StepAttempt, services: StepServices, code: str) -> ArtifactRef:
    """The program that produced the accepted outputs, kept with the step's artifacts."""
    return services.artifacts.put_bytes(
        attempt.inp.scope,
        code.encode("utf-8"),
        logical_path=attempt.code_path(),
        media_type="text/x-python",
    )


def _publications(
    attempt: StepAttempt, outputs: list[ArtifactRef], code_ref: ArtifactRef | None
) -> list[tuple[ArtifactRef, Provenance]]:
    """Each output with its provenance (the code that produced it, the contract, the inputs)."""
    code_hash = code_ref.sha256 if code_ref else attempt.step.executable_contract_v2.code_sha256
    provenance = attempt.provenance(code_hash)
    return [(ref, provenance) for ref in outputs]


def _published_event(
    attempt: StepAttempt, ref: ArtifactRef, version: int, *, caused_by: str
) -> EventDraft:
    """artifact.published.v1 for one output, with the version the index gave it."""
    return attempt.draft(
        ARTIFACT_PUBLISHED,
        ref.path,
        ArtifactPublished(
            step_key=attempt.inp.step_key,
            artifact=ref,
            version=version,
            contract_hash=attempt.step.contract_hash,
        ),
        caused_by=caused_by,
    )
