"""step__execute and run__finalize: the harness as activities, with events and provenance."""

import contextvars
import shutil
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.codeact import (
    HarnessSession,
    ModelServices,
    blocked_evaluations,
    evaluate_handler,
    evaluate_key_material,
    evaluator_unavailable,
    evidence_from_receipt,
    repair_context,
    run_evaluate_step,
    surfaced_tool_ids,
)
from activities.errors import step_failure
from activities.executor import ExecutorFailure, LoopSpec, TurnReport, run_loop
from activities.models.base import ModelError
from activities.sandbox import harness
from activities.sandbox.bridge import BridgeLedger, BridgeServer, ToolHandler
from activities.sandbox.bridge_tools import builtin_handlers
from activities.sandbox.harness import StepFailure
from activities.sandbox.receipts import receipt_summary
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from activities.skills_materialize import SkillGovernanceError, skill_dirs_for
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from activities.store.skill_packages import remove_tree
from activities.store.skills_registry import SkillRegistry, registry_skills_for
from compiler.budget import LedgerError, step_budget_refusal, step_overrun, usage_from_events
from compiler.typesystem.library import TypeLibrary
from schemas.artifacts import ArtifactRef, Provenance
from schemas.bridge import BridgePolicy
from schemas.budget import TOOL_CALLED, ToolCalled, Usage
from schemas.compiled import CompiledPlan, CompiledStep, DispatchPacket
from schemas.context import ContextPack, RunContext
from schemas.events import EventDraft
from schemas.models import RETRYABLE_MODEL_FAILURES, CallScope
from schemas.profile import ConsumerBinding
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
CODE_IN_EVENT = 8000  # characters of a program kept in its tool.called.v1 (all of it in the store)


def _remove_staging(staging: Path) -> None:
    """Remove an attempt's staged skills: sealed read-only, so rmtree alone would leave them."""
    with suppress(OSError):
        remove_tree(staging)


def _packet(plan: CompiledPlan, step: CompiledStep) -> DispatchPacket:
    """The step's dispatch packet: its execution contract holds the step's own timeout."""
    return next(p for p in plan.dispatch_packets if p.step_key == step.step_key)


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
        self,
        artifacts: ArtifactStore,
        events: EventStore,
        library: TypeLibrary,
        runs_dir: Path,
        *,
        models: ModelServices | None = None,
        registry: SkillRegistry | None = None,
        packs: Mapping[str, ContextPack] | None = None,
    ) -> None:
        self._artifacts = artifacts
        self._events = events
        self._library = library
        self._runs_dir = runs_dir
        self._models = models
        self._registry = registry
        # The executor's context pack decides which of a step's tools its code may call.
        self._packs = dict(packs if packs is not None else models.packs if models else {})
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
            retryable = (
                failure.failure_class in step.repair_policy.retryable_failure_classes
                # A provider that is rate-limited, overloaded or down: a later attempt may work.
                or failure.failure_class in RETRYABLE_MODEL_FAILURES
            )
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
            _remove_staging(workspace.parent / f"{workspace.name}.skills")
            for parent in (workspace.parent, workspace.parent.parent):  # step, then run dir
                with suppress(OSError):
                    parent.rmdir()  # only when empty: a sibling attempt may still run
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
        code = self._run_executor(inp, plan, step, workspace, attempt, started, pre)
        contract = _packet(plan, step).execution_contract
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
        code_ref = self._store_code(inp, code, attempt) if code is not None else None
        provenance = Provenance(
            run_id=inp.run_id,
            step_key=step.step_key,
            contract_hash=step.contract_hash,
            input_hashes={p: r.sha256 for p, r in sorted(inp.inputs.items())},
            code_hash=code_ref.sha256 if code_ref else step.executable_contract_v2.code_sha256,
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
                **({"code_ref": code_ref.model_dump(mode="json")} if code_ref else {}),
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

    def _run_executor(
        self,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        workspace: Path,
        attempt: int,
        started: str,
        pre: Receipt,
    ) -> str | None:
        """Step 6 of the harness; returns the model-written program that produced the outputs.

        Step code runs with the governed tool bridge served on meta/bridge.sock; a blocking
        evaluation its code asked for that did not pass fails the attempt.
        """
        skill_dirs = self._skill_dirs(inp, plan, step, workspace)
        run_context = self._run_context(inp, plan, step)
        with self._bridge(inp, plan, step, workspace, attempt, started, run_context):
            code = self._execute(inp, plan, step, workspace, attempt, started, pre, skill_dirs)
        if step.backend == "evaluator":
            return code  # its own verdict is enforced by run_evaluate_step (review cycles too)
        blocked = blocked_evaluations(
            self._events.read_stream(f"{inp.run_id}:step:{inp.step_key}"), attempt, inp.iteration
        )
        if blocked:
            raise StepFailure(
                "EVALUATION_FAILED",
                f"step {step.step_key}: a blocking evaluation did not pass: " + "; ".join(blocked),
            )
        return code

    @contextmanager
    def _bridge(
        self,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        workspace: Path,
        attempt: int,
        started: str,
        run_context: RunContext,
    ) -> Iterator[None]:
        """Serve the bridge for step code: the step's allowed tools the context surfaces."""
        if step.backend not in ("sandbox.frozen", "sandbox.session"):
            yield
            return
        profile = plan.profile_snapshot.profile
        packet = _packet(plan, step)
        surfaced = surfaced_tool_ids(self._packs["executor"], run_context)
        policy = BridgePolicy(
            run_id=inp.run_id,
            step_key=inp.step_key,
            attempt=attempt,
            iteration=inp.iteration,
            contract_hash=step.contract_hash,
            allowed_tool_ids=[
                t for t in step.allowed_tool_ids if t != "sandbox.session" and t in surfaced
            ],
            bridge_call_budget=packet.execution_contract.bridge_call_budget,
            egress=profile.egress,
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
        )
        ledger = BridgeLedger(
            self._events,
            self._artifacts,
            policy=policy,
            caused_by=started,
            run_budget_refusal=lambda: step_budget_refusal(
                inp.budget_left, self._usage(inp, attempt)
            ),
        )
        binding = profile.executor_by_backend.get("evaluator")
        evaluate: ToolHandler = evaluator_unavailable
        if self._models is not None and binding is not None:
            evaluate = evaluate_handler(
                self._models.evaluator,
                workspace,
                binding=binding,
                scope=CallScope(
                    tenant_id=inp.tenant_id,
                    project_id=inp.project_id,
                    run_id=inp.run_id,
                    stream_id=f"{inp.run_id}:step:{inp.step_key}",
                    step_key=inp.step_key,
                    attempt=attempt,
                    iteration=inp.iteration,
                    caused_by=started,
                    call_key="bridge-eval",
                ),
                run_context=run_context,
            )
        with BridgeServer(
            workspace / "meta" / "bridge.sock",
            policy=policy,
            handlers={**builtin_handlers(), "artifact.evaluate": evaluate},
            ledger=ledger,
            key_material={"artifact.evaluate": evaluate_key_material(workspace)},
        ):
            yield

    def _execute(
        self,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        workspace: Path,
        attempt: int,
        started: str,
        pre: Receipt,
        skill_dirs: dict[str, Path],
    ) -> str | None:
        profile = plan.profile_snapshot.profile
        if step.backend not in ("sandbox.session", "evaluator"):
            executor = harness.executor_for(step, self._adapter_source)
            harness.run_executor(
                workspace,
                executor,
                profile.sandbox,
                heartbeat=activity.heartbeat,
                skills=skill_dirs,
                bridge=True,
                timeout_s=_packet(plan, step).execution_contract.timeout_s,
            )
            return None
        models = self._models
        if models is None:
            raise StepFailure(
                "EXECUTOR_UNAVAILABLE",
                f"step {step.step_key} needs a model ({step.backend}) and this worker has no "
                "model provider: set ANTHROPIC_API_KEY (or FORGE_MODEL_SCRIPT to a script file) "
                "and restart the worker",
            )
        key = "sandbox.session" if step.backend == "sandbox.session" else "evaluator"
        binding = profile.executor_by_backend.get(key)
        if binding is None:
            raise StepFailure(
                "EXECUTOR_UNAVAILABLE",
                f"the execution profile {plan.profile_snapshot.profile_id} binds no model for "
                f"the {key} backend (executor_by_backend.{key})",
            )
        scope = CallScope(
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            run_id=inp.run_id,
            stream_id=f"{inp.run_id}:step:{inp.step_key}",
            step_key=inp.step_key,
            attempt=attempt,
            iteration=inp.iteration,
            caused_by=started,
            call_key="exec" if key == "sandbox.session" else "eval",
        )
        run_context = self._run_context(inp, plan, step)
        try:
            if key == "evaluator":
                run_evaluate_step(
                    models.evaluator,
                    workspace,
                    plan,
                    step,
                    binding=binding,
                    scope=scope,
                    run_context=run_context,
                )
                return None
            return self._code_act(
                inp,
                plan,
                step,
                workspace,
                attempt,
                pre,
                models,
                binding,
                scope,
                run_context,
                skill_dirs,
            )
        except ModelError as exc:
            raise StepFailure(exc.failure_class, f"step {step.step_key}: {exc.message}") from None

    def _skill_dirs(
        self, inp: StepExecuteInput, plan: CompiledPlan, step: CompiledStep, workspace: Path
    ) -> dict[str, Path]:
        """The step's bound skills, governance re-checked, to bind read-only at /skills/<id>."""
        if not step.recommended_skill_ids:
            return {}
        library = self._library.skills
        if self._registry is not None:
            library = registry_skills_for(self._registry, inp.tenant_id, library).skills
        try:
            return skill_dirs_for(
                step.recommended_skill_ids,
                library,
                self._registry,
                inp.tenant_id,
                plan.profile_snapshot.profile.skill_policy,
                step.skill_digests,
                workspace.parent / f"{workspace.name}.skills",
            )
        except SkillGovernanceError as exc:
            raise StepFailure("POLICY_BLOCKED", f"step {step.step_key}: {exc}") from None

    def _run_context(
        self, inp: StepExecuteInput, plan: CompiledPlan, step: CompiledStep
    ) -> RunContext:
        profile = plan.profile_snapshot.profile
        return RunContext(
            tenant_id=inp.tenant_id,
            project_id=inp.project_id,
            run_id=inp.run_id,
            safety_mode="confirm",
            snapshot_id=plan.library_snapshot_hash,
            facts={
                "backend": step.backend,
                "step_kind": step.kind,
                "effort": inp.effort.tier if inp.effort else "standard",
                "network": bool(profile.egress.allow),
                "egress_domains": sorted({r.domain for r in profile.egress.allow}),
                "iteration": inp.iteration,
            },
        )

    def _code_act(
        self,
        inp: StepExecuteInput,
        plan: CompiledPlan,
        step: CompiledStep,
        workspace: Path,
        attempt: int,
        pre: Receipt,
        models: ModelServices,
        binding: ConsumerBinding,
        scope: CallScope,
        run_context: RunContext,
        skill_dirs: Mapping[str, Path],
    ) -> str:
        packet = _packet(plan, step)
        events = self._events.read_stream(scope.stream_id)
        spec = LoopSpec(
            step=step,
            packet=packet,
            binding=binding,
            run_context=run_context,
            scope=scope,
            evidence=evidence_from_receipt(pre, plan.library_snapshot_hash),
            bridge_tools=[t for t in step.allowed_tool_ids if t != "sandbox.session"],
            thinking_budget_tokens=inp.effort.thinking_budget_tokens if inp.effort else None,
            repair=repair_context(events, attempt, inp.iteration),
        )
        session = HarnessSession(
            workspace,
            step,
            pre,
            plan.profile_snapshot.profile.sandbox,
            skills=skill_dirs,
            heartbeat=activity.heartbeat,
            budget_refusal=lambda: step_budget_refusal(inp.budget_left, self._usage(inp, attempt)),
            timeout_s=packet.execution_contract.timeout_s,
        )

        def record(turn: int, code: str, report: TurnReport) -> None:
            self._record_turn(inp, attempt, scope.caused_by, turn, code, report)

        try:
            outcome = run_loop(
                spec,
                gateway=models.gateway,
                pack=models.packs["executor"],
                session=session,
                record_dispatch=record,
            )
        except ExecutorFailure as exc:
            raise StepFailure(exc.failure_class, exc.message) from None
        return outcome.code

    def _record_turn(
        self,
        inp: StepExecuteInput,
        attempt: int,
        cause: str | None,
        turn: int,
        code: str,
        report: TurnReport,
    ) -> None:
        """One executor dispatch: a tool.called.v1 with the program and what the platform saw."""
        code_ref = self._artifacts.put_bytes(
            code.encode("utf-8"),
            logical_path=f"meta/{inp.run_id}/code/{inp.step_key}.{attempt}.turn-{turn}.py",
            media_type="text/x-python",
        )
        payload = ToolCalled(
            step_key=inp.step_key,
            attempt=attempt,
            tool="sandbox.session",
            channel="executor",
            iteration=inp.iteration,
            call_key=f"exec:{turn}",
            ok=report.verified,
            detail={
                "turn": turn,
                "code": code[:CODE_IN_EVENT],
                "code_ref": code_ref.model_dump(mode="json"),
                "exit_code": report.exit_code,
                "killed_by": report.killed_by,
                "problems": report.problems[:20],
                "files": report.files,
            },
        ).model_dump(mode="json")
        payload.pop("step_key")
        self._append(inp, [self._draft(inp, TOOL_CALLED, f"{attempt}.exec.{turn}", cause, payload)])

    def _store_code(self, inp: StepExecuteInput, code: str, attempt: int) -> ArtifactRef:
        """The program that produced the accepted outputs, kept with the step's artifacts."""
        suffix = f"{attempt}" if inp.iteration == 1 else f"i{inp.iteration}.{attempt}"
        return self._artifacts.put_bytes(
            code.encode("utf-8"),
            logical_path=f"meta/{inp.run_id}/code/{inp.step_key}.{suffix}.py",
            media_type="text/x-python",
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
