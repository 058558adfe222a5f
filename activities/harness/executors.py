"""Step 6 of the harness: the step's executor, with the tool bridge served to its code.

Frozen code and adapters run once in the sandbox; an `evaluator` step is one governed
evaluation; a `sandbox.session` step is the Code-Act loop, each of its programs recorded.
"""

from functools import partial
from pathlib import Path

from temporalio import activity

from activities.harness import program
from activities.harness.attempt import StepAttempt, StepServices
from activities.harness.bridge_session import bridge_session
from activities.harness.codeact import ExecutorFailure, LoopSpec, TurnReport, run_loop
from activities.harness.codeact_session import (
    HarnessSession,
    ModelServices,
    blocked_evaluations,
    evidence_from_receipt,
    executor_failure,
    repair_context,
    run_evaluate_step,
)
from activities.harness.failure import StepFailure
from activities.harness.ledger import AttemptLog, budget_refusal
from activities.harness.replay import replay_programs
from activities.harness.skills import SkillGovernanceError, skill_dirs_for
from activities.masked_output import clipped
from activities.models.base import ModelError
from activities.store.skills_registry import registry_skills_for
from compiler.typesystem.library import TypeLibrary
from schemas.budget import TOOL_CALLED, ToolCalled
from schemas.error_codes import ErrorCode
from schemas.events import Event
from schemas.profile import MODEL_BACKENDS, ConsumerBinding
from schemas.receipts import Receipt

CODE_IN_EVENT = 8000  # characters of a program kept in its tool.called.v1 (all of it in the store)


def run_executor(
    attempt: StepAttempt, services: StepServices, pre: Receipt, log: AttemptLog
) -> str | None:
    """Step 6 of the harness; returns the model-written program that produced the outputs.

    Step code runs with the governed tool bridge served on meta/bridge.sock; the bridge shares
    the step's stream with the attempt (`log`) from its first use on.
    """
    skill_dirs = _skill_dirs(attempt, services)
    with bridge_session(attempt, services, before_first_use=log.share):
        return _execute(attempt, services, pre, skill_dirs)


def check_evaluations(attempt: StepAttempt, ledger: list[Event]) -> None:
    """A blocking evaluation the step's code asked for that did not pass fails the attempt.

    `ledger` is the step's stream read once the executor exited. An evaluator step's own
    verdict is enforced by run_evaluate_step instead (review cycles too).
    """
    if attempt.step.backend == "evaluator":
        return
    blocked = blocked_evaluations(ledger, attempt.number, attempt.iteration)
    if blocked:
        raise StepFailure(
            ErrorCode.EVALUATION_FAILED,
            f"step {attempt.step.step_key}: a blocking evaluation did not pass: "
            + "; ".join(blocked),
        )


def _skill_dirs(attempt: StepAttempt, services: StepServices) -> dict[str, Path]:
    """The step's bound skills, governance re-checked, to bind read-only at /skills/<id>."""
    step = attempt.step
    if not step.recommended_skill_ids:
        return {}
    library = services.library.skills
    if services.registry is not None:
        library = registry_skills_for(services.registry, attempt.inp.scope.tenant, library).skills
    try:
        return skill_dirs_for(
            step.recommended_skill_ids,
            library,
            services.registry,
            attempt.inp.scope.tenant,
            attempt.profile.skill_policy,
            step.skill_digests,
            attempt.skills_staging,
        )
    except SkillGovernanceError as exc:
        raise StepFailure(ErrorCode.POLICY_BLOCKED, f"step {step.step_key}: {exc}") from None


def _execute(
    attempt: StepAttempt, services: StepServices, pre: Receipt, skill_dirs: dict[str, Path]
) -> str | None:
    step = attempt.step
    if step.backend not in MODEL_BACKENDS:
        executor = program.executor_for(step, partial(_adapter_source, services.library))
        program.run_program(
            attempt.workspace,
            executor,
            attempt.profile.sandbox,
            heartbeat=activity.heartbeat,
            skills=skill_dirs,
            bridge=True,
            timeout_s=attempt.packet.execution_contract.timeout_s,
            runtime_root=services.runtime_root,
        )
        return None
    if step.backend == "sandbox.session" and attempt.inp.replay:  # a sealed capsule step

        def record(turn: int, code: str, report: TurnReport) -> None:
            _record_turn(attempt, services, turn=turn, code=code, report=report, replayed=True)

        return replay_programs(
            attempt, services, harness_session(attempt, services, pre, skill_dirs), record
        )
    models = _models(attempt, services)
    binding = _binding(attempt)
    try:
        if step.backend == "evaluator":
            run_evaluate_step(
                models.evaluator,
                attempt.workspace,
                attempt.plan,
                step,
                binding=binding,
                scope=attempt.call_scope("eval"),
                run_context=attempt.run_context(),
            )
            return None
        return _code_act(
            attempt, services, pre, models=models, binding=binding, skill_dirs=skill_dirs
        )
    except ModelError as exc:
        raise StepFailure(exc.failure_class, f"step {step.step_key}: {exc.message}") from None


def harness_session(
    attempt: StepAttempt, services: StepServices, pre: Receipt, skill_dirs: dict[str, Path]
) -> HarnessSession:
    """Where a model-coded step's programs run: one workspace, verified after each program."""
    return HarnessSession(
        attempt.workspace,
        attempt.step,
        pre,
        attempt.profile.sandbox,
        skills=skill_dirs,
        heartbeat=activity.heartbeat,
        budget_refusal=budget_refusal(services.events, attempt),
        timeout_s=attempt.packet.execution_contract.timeout_s,
        runtime_root=services.runtime_root,
    )


def _adapter_source(library: TypeLibrary, adapter_id: str) -> bytes:
    adapter = library.adapters[adapter_id]
    yaml_path = Path(library.sources[adapter_id])
    return (yaml_path.parent / f"{adapter.module}.py").read_bytes()


def _models(attempt: StepAttempt, services: StepServices) -> ModelServices:
    if services.models is None:
        raise StepFailure(
            ErrorCode.EXECUTOR_UNAVAILABLE,
            f"step {attempt.step.step_key} needs a model ({attempt.step.backend}) and this "
            "worker has no model provider: set ANTHROPIC_API_KEY (or FORGE_MODEL_SCRIPT to a "
            "script file) and restart the worker",
        )
    return services.models


def _binding(attempt: StepAttempt) -> ConsumerBinding:
    """The model the profile binds for the step's backend."""
    key = attempt.step.backend
    binding = attempt.profile.executor_by_backend.get(key)
    if binding is None:
        raise StepFailure(
            ErrorCode.EXECUTOR_UNAVAILABLE,
            f"the execution profile {attempt.plan.profile_snapshot.profile_id} binds no model "
            f"for the {key} backend (executor_by_backend.{key})",
        )
    return binding


def _code_act(
    attempt: StepAttempt,
    services: StepServices,
    pre: Receipt,
    *,
    models: ModelServices,
    binding: ConsumerBinding,
    skill_dirs: dict[str, Path],
) -> str:
    """The Code-Act loop: the model writes programs, the harness runs and verifies each."""
    effort = attempt.inp.effort
    spec = LoopSpec(
        step=attempt.step,
        packet=attempt.packet,
        binding=binding,
        run_context=attempt.run_context(),
        scope=attempt.call_scope("exec"),
        evidence=evidence_from_receipt(pre, attempt.plan.library_snapshot_hash),
        bridge_tools=attempt.bridge_tool_ids,
        thinking_budget_tokens=effort.thinking_budget_tokens if effort else None,
        repair=repair_context(
            services.events.read_stream(attempt.stream_id, tenant_id=attempt.inp.scope.tenant),
            attempt.number,
            attempt.iteration,
        ),
        params=[(d, attempt.params[d.name]) for d in attempt.plan.parameters],
    )
    session = harness_session(attempt, services, pre, skill_dirs)

    def record(turn: int, code: str, report: TurnReport) -> None:
        _record_turn(attempt, services, turn=turn, code=code, report=report)

    try:
        outcome = run_loop(
            spec,
            gateway=models.gateway,
            pack=models.packs["executor"],
            session=session,
            record_dispatch=record,
        )
    except ExecutorFailure as exc:
        raise executor_failure(exc) from None
    return outcome.code


def _record_turn(
    attempt: StepAttempt,
    services: StepServices,
    *,
    turn: int,
    code: str,
    report: TurnReport,
    replayed: bool = False,
) -> None:
    """One executor dispatch: a tool.called.v1 with the program and what the platform saw.

    A sealed capsule step's programs are recorded the same way, `replayed` in their detail.
    """
    code_ref = services.artifacts.put_bytes(
        attempt.inp.scope,
        code.encode("utf-8"),
        logical_path=attempt.turn_code_path(turn),
        media_type="text/x-python",
    )
    payload = ToolCalled(
        step_key=attempt.inp.step_key,
        attempt=attempt.number,
        tool="sandbox.session",
        channel="executor",
        iteration=attempt.iteration,
        call_key=f"replay:{turn}" if replayed else f"exec:{turn}",
        ok=report.verified,
        detail={
            "turn": turn,
            **({"replayed": True} if replayed else {}),
            "code": clipped(code, CODE_IN_EVENT, "event"),
            "code_ref": code_ref.model_dump(mode="json"),
            "exit_code": report.exit_code,
            "killed_by": report.killed_by,
            "problems": report.problems[:20],
            "files": report.files,
        },
    )
    kind = "replay" if replayed else "exec"
    draft = attempt.draft(
        TOOL_CALLED, f"{attempt.number}.{kind}.{turn}", payload, caused_by=attempt.started
    )
    services.events.append([draft], stream_id=attempt.stream_id)
