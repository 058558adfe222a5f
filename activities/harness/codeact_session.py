"""Model-backed step executors inside the harness: Code-Act sessions and `evaluate` steps.

run_attempt.py runs the nine harness steps; for a `sandbox.session` step its executor step is the
Code-Act tool loop (activities.harness.codeact) over a HarnessSession, and for an `evaluator` step
it is one governed evaluation of the step's declared bundle. Both are built from ModelServices, the
model layer a worker holds (gateway, context packs, evaluator).
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from activities.harness import checks, program
from activities.harness.codeact import TAIL, ExecutorFailure, RepairContext, TurnReport
from activities.harness.evaluator import (
    EvaluationError,
    EvaluationRequest,
    Evaluator,
    bundle_from_workspace,
)
from activities.harness.failure import StepFailure
from activities.harness.program import Executor
from activities.harness.receipts import receipt_summary
from activities.masked_output import clipped
from activities.models.base import ModelError
from activities.models.gateway import ModelGateway
from activities.sandbox.bridge import BridgeCall, ToolError, ToolHandler, ToolRefused
from activities.sandbox.step_runtime import RUNTIME_DIR
from activities.sandbox.workspace import WorkspaceViolation, safe_read
from schemas.compiled import CompiledPlan, CompiledStep
from schemas.context import ContextPack, EvidenceRef, RunContext
from schemas.error_codes import ErrorCode
from schemas.evaluator import EVALUATION_PROOF, EvaluationProof, EvaluationSpec
from schemas.event_catalogue import STEP_FAILED, TOOL_CALLED
from schemas.events import Event
from schemas.models import CallScope
from schemas.profile import ConsumerBinding, SandboxPolicy
from schemas.receipts import Receipt

TURN_DIR = "work/.forge"


@dataclass(frozen=True)
class ModelServices:
    """The model layer a worker holds: one gateway, the context packs, the evaluator."""

    gateway: ModelGateway
    packs: Mapping[str, ContextPack]
    evaluator: Evaluator


class HarnessSession:
    """The platform side of a Code-Act loop: run a program, then verify like the harness does."""

    def __init__(
        self,
        workspace: Path,
        step: CompiledStep,
        preflight: Receipt,
        policy: SandboxPolicy,
        *,
        skills: Mapping[str, Path],
        heartbeat: Callable[[], None] | None,
        budget_refusal: Callable[[], str | None],
        timeout_s: float | None = None,
        runtime_root: Path = RUNTIME_DIR,
    ) -> None:
        self._workspace = workspace
        self._runtime_root = runtime_root
        # The step's timeout covers every program of the loop, not each one.
        self._timeout_s = timeout_s
        self._deadline = None if timeout_s is None else time.monotonic() + timeout_s
        self._step = step
        self._pre = preflight
        self._policy = policy
        self._skills = skills
        self._heartbeat = heartbeat
        self._budget_refusal = budget_refusal

    def run_code(self, code: str, turn: int) -> TurnReport:
        rel = f"{TURN_DIR}/turn-{turn}.py"
        (self._workspace / TURN_DIR).mkdir(parents=True, exist_ok=True)
        remaining = None if self._deadline is None else self._deadline - time.monotonic()
        if remaining is not None and remaining < 1:
            raise StepFailure(
                ErrorCode.SANDBOX_TIMEOUT,
                f"the step's timeout of {self._timeout_s:g} s is spent: no time is left to run "
                "another program",
            )
        result = program.launch(
            self._workspace,
            Executor(argv=["python", f"/workspace/{rel}"], files={rel: code.encode("utf-8")}),
            self._policy,
            self._heartbeat,
            self._skills,
            bridge=True,
            timeout_s=remaining,
            runtime_root=self._runtime_root,
        )
        failure = program.program_failure(result, self._policy)
        if failure is not None and failure.failure_class in (
            ErrorCode.SANDBOX_SESSION_DEAD,
            ErrorCode.CONTRACT_VIOLATION,
        ):
            # A dead sandbox or planted links/special files: the attempt ends, no next turn.
            raise failure
        report = self.check()
        problems = list(report.problems)
        failure_class = report.failure_class
        if failure is not None:
            problems.insert(0, failure.message)
            failure_class = failure.failure_class
        return TurnReport(
            exit_code=result.exit_code,
            killed_by=result.killed_by,
            stdout_tail=clipped(result.stdout, TAIL, "prompt", keep="tail"),
            stderr_tail=clipped(result.stderr, TAIL, "prompt", keep="tail"),
            files=report.files,
            problems=problems,
            failure_class=failure_class if problems else None,
        )

    def check(self) -> TurnReport:
        problems: list[str] = []
        failure_class: ErrorCode | None = None
        files: dict[str, Any] = {}
        verifications: list[Callable[[], None]] = [
            lambda: checks.check_undeclared_writes(self._workspace, self._step, self._pre),
        ]
        try:
            post = checks.postflight(self._workspace, self._step)
            files = receipt_summary(post)
            verifications += [
                lambda: checks.verify_outputs(post, self._step),
                lambda: checks.verify_skill_output(self._workspace, self._step),
            ]
        except StepFailure as failure:
            problems.append(failure.message)
            failure_class = failure.failure_class
        for check in verifications:
            try:
                check()
            except StepFailure as failure:
                problems.append(failure.message)
                failure_class = failure_class or failure.failure_class
        return TurnReport(None, None, "", "", files, problems, failure_class)

    def budget_refusal(self) -> str | None:
        return self._budget_refusal()


def evidence_from_receipt(receipt: Receipt, snapshot_id: str) -> list[EvidenceRef]:
    """The step's verified inputs as evidence refs: path, size, hash and schema summary."""
    refs = []
    for f in receipt.files:
        if not f.exists:
            continue
        summary = {
            "path": f.path,
            "size_bytes": f.size_bytes,
            "sha256": f.sha256,
            "schema_summary": f.schema_summary,
        }
        refs.append(
            EvidenceRef(
                id=f"input:{f.path}",
                class_="step_input",
                classification="INTERNAL",
                payload_hash=f.sha256 or "",
                snapshot_id=snapshot_id,
                summary="input " + json.dumps(summary, sort_keys=True, default=str),
                priority=50,
            )
        )
    return refs


def repair_context(events: list[Event], attempt: int, iteration: int) -> RepairContext | None:
    """The previous attempt's failure and last program, for a repair attempt (same contract)."""
    if attempt <= 1:
        return None
    previous = attempt - 1

    def mine(e: Event) -> bool:
        p = e.payload
        return p.get("attempt") == previous and p.get("iteration", 1) == iteration

    failed = [e for e in events if e.type == STEP_FAILED and mine(e)]
    if not failed:
        return None
    turns = [
        e
        for e in events
        if e.type == TOOL_CALLED and e.payload.get("channel") == "executor" and mine(e)
    ]
    detail = turns[-1].payload.get("detail", {}) if turns else {}
    payload = failed[-1].payload
    return RepairContext(
        attempt=previous,
        failure_class=str(payload.get("failure_class", "")),
        message=clipped(str(payload.get("message", "")), 2000, "prompt"),
        missing_outputs=list(detail.get("problems", []))[:20],
        last_code=detail.get("code"),
        write_diff=dict(detail.get("files", {})),
    )


def evaluation_spec(step: CompiledStep) -> EvaluationSpec:
    """The step's declared bundle, or every input judged against its success criteria."""
    spec = step.evaluation or EvaluationSpec()
    inputs = list(step.executable_contract_v2.read_paths)
    derived = spec.derived or [p for p in inputs if p not in spec.source]
    rubric = spec.rubric or [step.success_criteria or f"the inputs fulfil: {step.objective}"]
    return spec.model_copy(update={"derived": derived, "rubric": rubric})


def run_evaluate_step(
    evaluator: Evaluator,
    workspace: Path,
    plan: CompiledPlan,
    step: CompiledStep,
    *,
    binding: ConsumerBinding,
    scope: CallScope,
    run_context: RunContext,
) -> EvaluationProof:
    """An `evaluate` step: judge the declared bundle, write the verdict, enforce it."""
    spec = evaluation_spec(step)
    subject = f"{step.label}: {step.objective}"
    if spec.contract:
        subject += f"\nWhat the artifacts claim (their contract):\n{spec.contract}"
    try:
        bundle = bundle_from_workspace(
            workspace,
            derived=spec.derived,
            source=spec.source,
            rubric=spec.rubric,
            subject=subject,
        )
        # Doubt-driven review (seed 004 §9.6): each cycle is a fresh evaluator call that sees
        # only the artifacts and their contract; pass or fail stops, uncertain doubts again.
        for cycle in range(1, spec.cycles + 1):
            proof = evaluator.evaluate(
                EvaluationRequest(
                    bundle=bundle,
                    enforcement=spec.enforcement,
                    binding=binding,
                    scope=scope.model_copy(update={"call_key": f"eval:c{cycle}"}),
                    run_context=run_context,
                    proof_key=f"{scope.stream_id}:eval:{scope.iteration}:{scope.attempt}"
                    + (f":c{cycle}" if spec.cycles > 1 else ""),
                    review_of=", ".join(spec.derived) if spec.cycles > 1 else None,
                )
            )
            if proof.verdict != "uncertain":
                break
    except EvaluationError as exc:
        raise StepFailure(exc.failure_class, f"step {step.step_key}: {exc.message}") from None
    [verdict_path] = [p for p in step.executable_contract_v2.write_paths if p.endswith(".json")][:1]
    target = workspace / verdict_path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(
        json.dumps(
            {
                "verdict": proof.verdict,
                "summary": proof.summary,
                "criteria": [c.model_dump(mode="json") for c in proof.criteria],
                "proof_id": proof.proof_id,
                "model_call_id": proof.model_call_id,
                "bundle_sha256": proof.bundle_sha256,
                "enforcement": proof.enforcement,
            },
            indent=2,
            sort_keys=True,
        )
        + "\n",
        encoding="utf-8",
    )
    if not proof.passed:
        failed = [c.criterion for c in proof.criteria if c.result != "pass"]
        if proof.verdict == "uncertain" and spec.cycles > 1:
            failed.append(f"still uncertain after {spec.cycles} review cycles")
        raise StepFailure(
            ErrorCode.EVALUATION_FAILED,
            f"step {step.step_key}: the evaluator's verdict is {proof.verdict} "
            f"(enforcement block); criteria not passed: {', '.join(failed) or 'none'}; "
            f"{clipped(proof.summary, 300, 'failure')}",
        )
    return proof


def executor_failure(exc: ExecutorFailure) -> StepFailure:
    return StepFailure(exc.failure_class, exc.message)


__all__ = [
    "HarnessSession",
    "ModelServices",
    "evaluation_spec",
    "evidence_from_receipt",
    "executor_failure",
    "repair_context",
    "run_evaluate_step",
]


def _strings(args: dict[str, Any], name: str) -> list[str]:
    value = args.get(name, [])
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ToolRefused(
            ErrorCode.BAD_ARGUMENTS, f"artifact.evaluate: `{name}` must be a list of strings"
        )
    return value


def evaluate_key_material(workspace: Path) -> Callable[[dict[str, Any]], Any]:
    """The digests of the files a call would judge: a replay needs the same content."""

    def material(args: dict[str, Any]) -> Any:
        paths = [*_strings(args, "derived"), *_strings(args, "source"), *_strings(args, "path")]
        digests = {}
        for p in paths:
            rel = p.removeprefix("/workspace/").lstrip("/")
            try:
                digests[p] = hashlib.sha256(safe_read(workspace, rel, 64 * 1024 * 1024)).hexdigest()
            except (FileNotFoundError, WorkspaceViolation, ValueError) as exc:
                digests[p] = f"unreadable: {exc}"
        return digests

    return material


def evaluate_handler(
    evaluator: Evaluator,
    workspace: Path,
    *,
    binding: ConsumerBinding,
    scope: CallScope,
    run_context: RunContext,
) -> ToolHandler:
    """artifact.evaluate for step code: a bundle of workspace files judged, the proof kept.

    Arguments: derived (paths judged; `path` is accepted for one), source (paths the work was
    made from), rubric (criteria), enforcement (block | report), subject. The result is plain
    data: verdict, passed, summary, criteria, proof_id, model_call_id, bundle_sha256. A blocking
    verdict that fails is returned to the code and fails the step when its program ends.
    """

    def handle(args: dict[str, Any], call: BridgeCall) -> dict[str, Any]:
        derived = _strings(args, "derived") or _strings(args, "path")
        enforcement = args.get("enforcement", "block")
        if enforcement not in ("block", "report"):
            raise ToolRefused(
                ErrorCode.BAD_ARGUMENTS, "artifact.evaluate: enforcement is block or report"
            )
        try:
            bundle = bundle_from_workspace(
                workspace,
                derived=derived,
                source=_strings(args, "source"),
                rubric=_strings(args, "rubric"),
                subject=str(args.get("subject", ""))[:500],
            )
        except EvaluationError as exc:
            raise ToolRefused(
                ErrorCode.BAD_ARGUMENTS, f"artifact.evaluate: {exc.message}"
            ) from None
        try:
            proof = evaluator.evaluate(
                EvaluationRequest(
                    bundle=bundle,
                    enforcement=enforcement,
                    binding=binding,
                    scope=scope.model_copy(update={"call_key": f"bridge-eval:{call.index}"}),
                    run_context=run_context,
                    proof_key=f"{scope.stream_id}:bridge-eval:{scope.iteration}:"
                    f"{scope.attempt}:{call.index}",
                )
            )
        except EvaluationError as exc:
            raise ToolError(exc.failure_class, exc.message) from None
        except ModelError as exc:
            raise ToolError(exc.failure_class, exc.message) from None
        return {
            "verdict": proof.verdict,
            "passed": proof.passed,
            "summary": proof.summary,
            "criteria": [c.model_dump(mode="json") for c in proof.criteria],
            "proof_id": proof.proof_id,
            "model_call_id": proof.model_call_id,
            "bundle_sha256": proof.bundle_sha256,
        }

    return handle


def evaluator_unavailable(_args: dict[str, Any], _call: BridgeCall) -> Any:
    raise ToolRefused(
        ErrorCode.EVALUATOR_UNAVAILABLE,
        "artifact.evaluate needs a model and this worker has none: set ANTHROPIC_API_KEY (or "
        "FORGE_MODEL_SCRIPT) and restart the worker",
    )


def blocked_evaluations(events: list[Event], attempt: int, iteration: int) -> list[str]:
    """Blocking evaluations of this attempt that did not pass: each fails the step."""
    failed = []
    for e in events:
        p = e.payload
        if (
            e.type == EVALUATION_PROOF
            and p.get("attempt") == attempt
            and p.get("iteration", 1) == iteration
            and p.get("enforcement") == "block"
            and not p.get("passed")
        ):
            failed.append(
                f"{p.get('proof_id')}: {p.get('verdict')} "
                f"({clipped(str(p.get('summary')), 200, 'failure')})"
            )
    return failed
