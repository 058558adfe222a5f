"""step__execute and run__finalize: the harness as activities, with events and provenance."""

import contextvars
import shutil
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.errors import step_failure
from activities.sandbox import harness
from activities.sandbox.harness import StepFailure
from activities.sandbox.receipts import receipt_summary
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from compiler.budget import LedgerError, step_overrun, usage_from_events
from compiler.typesystem.library import TypeLibrary
from schemas.artifacts import ArtifactRef, Provenance
from schemas.budget import Usage
from schemas.compiled import CompiledPlan, CompiledStep
from schemas.events import EventDraft
from schemas.receipts import Receipt
from schemas.run import (
    FinalizeInput,
    FinalizeResult,
    ReuseInput,
    ReuseResult,
    StepExecuteInput,
    StepExecuteResult,
    StepUsageInput,
)

MAX_PLAN_BYTES = 64 * 1024 * 1024
# Well inside the workflow's heartbeat timeout: materializing, hashing and persisting large
# files must never look like a dead worker (that would start a second attempt alongside).
HEARTBEAT_EVERY_S = 2.0


@contextmanager
def _heartbeating() -> Iterator[None]:
    """Heartbeat from a side thread for as long as the attempt runs."""
    stop = threading.Event()
    context = contextvars.copy_context()

    def beat() -> None:
        while not stop.wait(HEARTBEAT_EVERY_S):
            context.run(activity.heartbeat)

    thread = threading.Thread(target=beat, name="forge-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


ITERATION_FILE = "meta/iteration"
NOTE_FILE = "work/note.md"  # the step's done-note: what a loop's until-dry / until MARKER reads
NOTE_MAX = 4096


def read_note(workspace: Path) -> str | None:
    """The done-note the step left, read without following links; capped, never fatal."""
    try:
        data = safe_read(workspace, NOTE_FILE, 1 << 20)
    except FileNotFoundError:
        return None
    except WorkspaceViolation as err:
        return f"(note refused: {err})"
    return data[:NOTE_MAX].decode("utf-8", errors="replace").strip()


class StepActivities:
    """Runs one step attempt through the nine harness steps; holds the stores it writes to."""

    def __init__(
        self, artifacts: ArtifactStore, events: EventStore, library: TypeLibrary, runs_dir: Path
    ) -> None:
        self._artifacts = artifacts
        self._events = events
        self._library = library
        self._runs_dir = runs_dir
        self._plans: dict[str, CompiledPlan] = {}

    def _plan(self, ref: ArtifactRef) -> CompiledPlan:
        if ref.sha256 not in self._plans:
            raw = self._artifacts.read_bytes(ref.sha256, MAX_PLAN_BYTES)
            self._plans[ref.sha256] = CompiledPlan.model_validate_json(raw)
        return self._plans[ref.sha256]

    def _adapter_source(self, adapter_id: str) -> bytes:
        adapter = self._library.adapters[adapter_id]
        yaml_path = Path(self._library.sources[adapter_id])
        return (yaml_path.parent / f"{adapter.module}.py").read_bytes()

    def _draft(
        self,
        inp: StepExecuteInput,
        type_: str,
        suffix: str,
        cause: str | None,
        payload: dict[str, Any],
    ) -> EventDraft:
        if isinstance(inp, StepExecuteInput) and inp.iteration > 1:
            # A loop's later passes: their own events (ids and payloads name the iteration).
            suffix = f"i{inp.iteration}.{suffix}"
            payload = {**payload, "iteration": inp.iteration}
        return EventDraft(
            event_id=f"{inp.run_id}:{type_}:{inp.step_key}:{suffix}",
            type=type_,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            run_id=inp.run_id,
            caused_by=cause,
            timestamp=datetime.now(UTC),
            payload={"step_key": inp.step_key, **payload},
        )

    def _append(self, inp: StepExecuteInput, drafts: list[EventDraft]) -> None:
        """One transaction for several events (each commit costs a SQLite fsync)."""
        self._events.append(drafts, stream_id=f"{inp.run_id}:step:{inp.step_key}")

    def _usage(self, inp: StepExecuteInput | StepUsageInput, attempt: int | None = None) -> Usage:
        """The step's recorded usage (over every attempt, or one) from the usage ledger.

        A malformed usage event is a platform fault no retry can mend: the step fails for good.
        """
        try:
            return usage_from_events(
                self._events.read_stream(f"{inp.run_id}:step:{inp.step_key}"), attempt=attempt
            )
        except LedgerError as exc:
            raise StepFailure("LEDGER_CORRUPT", f"step {inp.step_key}: {exc}") from None

    def _usage_detail(self, inp: StepExecuteInput) -> dict[str, Any]:
        """The usage to report with a failure; nothing when the ledger itself is the fault."""
        try:
            return {"usage": self._usage(inp).model_dump(mode="json")}
        except StepFailure:
            return {}

    @activity.defn(name="step__usage")
    def usage(self, inp: StepUsageInput) -> Usage:
        """Recorded usage of a step whose last attempt died without reporting it."""
        try:
            return self._usage(inp)
        except StepFailure as failure:
            raise step_failure(
                failure.failure_class, failure.message, attempt=1, retryable=False
            ) from None

    def _workspace(self, inp: StepExecuteInput, attempt: int) -> Path:
        """The attempt's workspace; it must stay under runs/ whatever the ids say."""
        root = self._runs_dir.resolve()
        name = f"attempt-{attempt}" if inp.iteration == 1 else f"i{inp.iteration}-attempt-{attempt}"
        workspace = (root / inp.run_id / inp.step_key / name).resolve()
        if not workspace.is_relative_to(root) or workspace == root:
            raise step_failure(
                "CONTRACT_VIOLATION",
                f"workspace {workspace} escapes {root}",
                attempt=attempt,
                retryable=False,
            )
        return workspace

    def _store_receipt(self, inp: StepExecuteInput, receipt: Receipt, attempt: int) -> ArtifactRef:
        return self._artifacts.put_bytes(
            receipt.model_dump_json(indent=2).encode("utf-8"),
            logical_path=f"meta/{inp.run_id}/receipts/{inp.step_key}.{receipt.phase}."
            + (f"{attempt}.json" if inp.iteration == 1 else f"i{inp.iteration}.{attempt}.json"),
            media_type="application/json",
        )

    @activity.defn(name="step__execute")
    def execute(self, inp: StepExecuteInput) -> StepExecuteResult:
        """One attempt through the harness; a completed step is never executed twice."""
        attempt = activity.info().attempt
        plan = self._plan(inp.compiled_ref)
        step = next(s for s in plan.steps if s.step_key == inp.step_key)
        # Attempt 1 cannot find an earlier completion; later attempts may (a lost report).
        try:
            done = self._already_completed(inp, step, attempt) if attempt > 1 else None
        except StepFailure as failure:
            raise step_failure(
                failure.failure_class, failure.message, attempt=attempt, retryable=False
            ) from None
        if done is not None:
            return done
        # Events of one attempt are buffered and appended in two transactions (after the
        # preflight receipt, and at the end), since every commit costs a disk flush.
        started_draft = self._draft(
            inp,
            "step.started.v1",
            str(attempt),
            inp.cause_event_id,
            {
                "attempt": attempt,
                "contract_hash": step.contract_hash,
                "step_id": step.step_id,
                **(
                    {
                        "effort": {
                            "tier": inp.effort.tier,
                            "model_tier": inp.effort.model_tier,
                            "thinking_budget_tokens": inp.effort.thinking_budget_tokens,
                        }
                    }
                    if inp.effort is not None
                    else {}
                ),
            },
        )
        pending = [started_draft]
        started = started_draft.event_id
        workspace = self._workspace(inp, attempt)
        try:
            with _heartbeating():
                result = self._attempt(inp, plan, step, workspace, attempt, started, pending)
        except StepFailure as failure:
            retryable = failure.failure_class in step.repair_policy.retryable_failure_classes
            failed = self._draft(
                inp,
                "step.failed.v1",
                str(attempt),
                started,
                {
                    "attempt": attempt,
                    "failure_class": failure.failure_class,
                    "message": failure.message,
                    "retryable": retryable,
                },
            )
            self._append(inp, [*pending, failed])
            raise step_failure(
                failure.failure_class,
                failure.message,
                attempt=attempt,
                retryable=retryable,
                **self._usage_detail(inp),
            ) from None
        finally:
            # Receipts and events keep what matters; a workspace never outlives its attempt.
            shutil.rmtree(workspace, ignore_errors=True)
        return result

    def _attempt(
        self,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        workspace: Path,
        attempt: int,
        started: str,
        pending: list[EventDraft],
    ) -> StepExecuteResult:
        harness.prepare_workspace(workspace)
        # Which pass of a loop this is, for step code that adapts (1 for a step without a loop).
        (workspace / ITERATION_FILE).write_text(f"{inp.iteration}\n", encoding="utf-8")
        harness.materialize_inputs(workspace, step, inp.inputs, self._artifacts)
        pre = harness.preflight(workspace, step)
        pre_ref = self._store_receipt(inp, pre, attempt)
        pending.append(
            self._draft(
                inp,
                "step.receipt.preflight.v1",
                str(attempt),
                started,
                {
                    "attempt": attempt,
                    "receipt_ref": pre_ref.model_dump(mode="json"),
                    "files": receipt_summary(pre),
                },
            )
        )
        self._append(inp, pending)
        pending.clear()
        harness.verify_inputs(pre, step)
        executor = harness.executor_for(step, self._adapter_source)
        harness.run_executor(
            workspace, executor, plan.profile_snapshot.profile.sandbox, heartbeat=activity.heartbeat
        )
        contract = next(
            p.execution_contract for p in plan.dispatch_packets if p.step_key == step.step_key
        )
        usage = self._usage(inp)  # the ledger is complete once the executor has exited
        overrun = step_overrun(
            self._usage(inp, attempt),
            tool_budget=contract.tool_budget,
            bridge_call_budget=contract.bridge_call_budget,
        )
        if overrun is not None:
            raise StepFailure("BUDGET_EXHAUSTED", f"step {step.step_key}: {overrun}")
        note = read_note(workspace)
        harness.check_undeclared_writes(workspace, step, pre)
        post = harness.postflight(workspace, step)
        post_ref = self._store_receipt(inp, post, attempt)
        post_draft = self._draft(
            inp,
            "step.receipt.postflight.v1",
            str(attempt),
            started,
            {
                "attempt": attempt,
                "receipt_ref": post_ref.model_dump(mode="json"),
                "files": receipt_summary(post),
            },
        )
        pending.append(post_draft)
        post_event = post_draft.event_id
        harness.verify_outputs(post, step)
        harness.verify_skill_output(workspace, step)
        outputs = harness.persist_outputs(workspace, step, self._artifacts)
        provenance = Provenance(
            run_id=inp.run_id,
            step_key=step.step_key,
            contract_hash=step.contract_hash,
            input_hashes={p: r.sha256 for p, r in sorted(inp.inputs.items())},
            code_hash=step.executable_contract_v2.code_sha256,
            attempt=attempt,
        )
        drafts = []
        for ref in outputs:
            published = self._events.publish_artifact(ref, provenance)
            drafts.append(
                self._draft(
                    inp,
                    "artifact.published.v1",
                    ref.path,
                    post_event,
                    {
                        "artifact": ref.model_dump(mode="json"),
                        "version": published.version,
                        "contract_hash": step.contract_hash,
                    },
                )
            )
        summary = receipt_summary(post)
        completed = self._draft(
            inp,
            "step.completed.v1",
            "done",
            post_event,
            {
                "attempt": attempt,
                "outputs": [r.model_dump(mode="json") for r in outputs],
                "preflight_ref": pre_ref.model_dump(mode="json"),
                "postflight_ref": post_ref.model_dump(mode="json"),
                "receipt": summary,
                "note": note,
            },
        )
        self._append(inp, [*pending, *drafts, completed])
        pending.clear()
        return StepExecuteResult(
            step_key=step.step_key,
            attempt=attempt,
            outputs=outputs,
            preflight_ref=pre_ref,
            postflight_ref=post_ref,
            receipt_summary=summary,
            completed_event_id=completed.event_id,
            usage=usage,
            iteration=inp.iteration,
            note=note,
        )

    def _already_completed(
        self, inp: StepExecuteInput, step: CompiledStep, attempt: int
    ) -> StepExecuteResult | None:
        """A retry after the step completed (e.g. the worker died before reporting): no rerun."""
        for event in self._events.read_stream(f"{inp.run_id}:step:{inp.step_key}"):
            if event.type == "step.completed.v1" and event.payload.get("iteration", 1) == (
                inp.iteration
            ):
                p = event.payload
                return StepExecuteResult(
                    step_key=step.step_key,
                    attempt=int(p["attempt"]),
                    outputs=[ArtifactRef.model_validate(o) for o in p["outputs"]],
                    preflight_ref=ArtifactRef.model_validate(p["preflight_ref"]),
                    postflight_ref=ArtifactRef.model_validate(p["postflight_ref"]),
                    receipt_summary=p["receipt"],
                    completed_event_id=event.event_id,
                    usage=self._usage(inp),
                    iteration=inp.iteration,
                    note=p.get("note"),
                )
        return None

    @activity.defn(name="run__finalize")
    def finalize(self, inp: FinalizeInput) -> FinalizeResult:
        """Final-output check (every output published and intact) and the run.completed event."""
        plan = self._plan(inp.compiled_ref)
        published = {(p.path, p.sha256) for p in self._events.list_published(inp.run_id)}
        problems = [
            f"{ref.path} was not published"
            for ref in inp.outputs
            if (ref.path, ref.sha256) not in published
        ]
        problems += [
            f"{ref.path} is missing from the artifact store"
            for ref in inp.outputs
            if not self._artifacts.exists(ref.sha256)
        ]
        type_ = "run.failed.v1" if problems else "run.completed.v1"
        self._events.append(
            [
                EventDraft(
                    event_id=f"{inp.run_id}:{type_}",
                    type=type_,
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    run_id=inp.run_id,
                    caused_by=inp.cause_event_id,
                    timestamp=inp.finished_at or datetime.now(UTC),
                    payload={
                        "plan_hash": plan.plan_hash,
                        "problems": problems,
                        "outputs": [r.model_dump(mode="json") for r in inp.outputs],
                        "cost": {"input_tokens": 0, "output_tokens": 0, "usd": 0.0},
                    },
                )
            ],
            stream_id=f"{inp.run_id}:run",
        )
        return FinalizeResult(published=inp.outputs, problems=problems)


class ReuseActivities:
    """step__reuse: adopt an earlier run's verified outputs instead of executing a step again."""

    def __init__(self, artifacts: ArtifactStore, events: EventStore) -> None:
        self._artifacts = artifacts
        self._events = events

    @activity.defn(name="step__reuse")
    def reuse(self, inp: ReuseInput) -> ReuseResult:
        """Reuse only an unchanged contract on unchanged inputs whose outputs are still intact."""
        step = inp.step
        if step.contract_hash != inp.contract_hash:
            return ReuseResult(reused=False, reason="its contract changed")
        now = {p: r.sha256 for p, r in sorted(inp.inputs.items())}
        if step.input_hashes != now:
            return ReuseResult(reused=False, reason="its inputs changed")
        for ref in step.outputs:
            if not self._artifacts.exists(ref.sha256):
                return ReuseResult(reused=False, reason=f"{ref.path} is gone from the store")
        provenance = Provenance(
            run_id=inp.run_id,
            step_key=step.step_key,
            contract_hash=step.contract_hash,
            input_hashes=now,
            code_hash=None,
            attempt=1,
        )
        for ref in step.outputs:
            self._events.publish_artifact(ref, provenance)
        self._events.append(
            [
                EventDraft(
                    event_id=f"{inp.run_id}:step.reused.v1:{step.step_key}",
                    type="step.reused.v1",
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    run_id=inp.run_id,
                    caused_by=inp.cause_event_id,
                    timestamp=datetime.now(UTC),
                    payload={
                        "step_key": step.step_key,
                        "from_run": inp.resumed_from,
                        "contract_hash": step.contract_hash,
                        "outputs": [r.model_dump(mode="json") for r in step.outputs],
                    },
                )
            ],
            stream_id=f"{inp.run_id}:step:{step.step_key}",
        )
        return ReuseResult(
            reused=True, reason=f"reused from {inp.resumed_from}", outputs=step.outputs
        )
