"""Pass E, compile-time part: one frozen execution profile and a dispatch packet per step."""

from compiler.budget import project_step
from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, resolve_profile
from compiler.plan.gates import plan_gates
from schemas.compiled import (
    Backend,
    CompiledPlan,
    ContractPlan,
    DispatchPacket,
    ExecutionContract,
    IOContract,
    MaterializedSkillPackage,
    SkillBinding,
)
from schemas.diagnostics import Diagnostic

PATTERNS: dict[Backend, str] = {
    "sandbox.frozen": "frozen_code",
    "sandbox.session": "code_act",
    "evaluator": "evaluate_bundle",
    "gate": "await_decision",
    "child_workflow": "child_plan",
}


def freeze(plan: ContractPlan, *, ctx: CompileContext) -> CompiledPlan:
    """Resolve and freeze the profile, check its budgets, emit dispatch packets."""
    snapshot = resolve_profile(ctx)
    budgets = snapshot.profile.budgets
    if len(plan.steps) > budgets.max_steps:
        raise CompilerError(
            [
                Diagnostic(
                    code="E_TOO_MANY_STEPS",
                    field="steps",
                    message=f"{len(plan.steps)} steps (adapters included) exceed max_steps "
                    f"{budgets.max_steps} of profile {snapshot.profile_id}",
                    hint="split the plan or use a profile with a larger budgets.max_steps",
                )
            ]
        )
    packets = []
    for step in plan.steps:
        ex = step.executable_contract_v2
        model_written = step.backend == "sandbox.session"
        tool_budget = budgets.tool_budget_per_step if model_written else 0
        packets.append(
            DispatchPacket(
                step_key=step.step_key,
                step_id=step.step_id,
                contract_hash=step.contract_hash,
                profile_snapshot_hash=snapshot.snapshot_hash,
                io_contract=IOContract(read_paths=ex.read_paths, write_paths=ex.write_paths),
                execution_contract=ExecutionContract(
                    pattern=PATTERNS[step.backend],
                    backend=step.backend,
                    tool_budget=tool_budget,
                    bridge_call_budget=budgets.bridge_calls_per_step,
                    timeout_s=min(budgets.step_timeout_s, snapshot.profile.sandbox.wall_clock_s),
                    repair_strategy=ex.execution_policy.repair_strategy,
                    max_retries=ex.execution_policy.max_retries,
                    projected=project_step(
                        step.backend, tool_budget, snapshot.profile, ctx.profiles.prices
                    ),
                ),
                artifact_contracts=step.resolved_artifact_contracts,
                skill_bindings=[SkillBinding(skill_id=k) for k in step.recommended_skill_ids],
                materialized_skill_packages=[
                    MaterializedSkillPackage(
                        skill_id=k,
                        paths=[f"/skills/{k}/{f}" for f in ctx.library.skills[k].files],
                    )
                    for k in step.recommended_skill_ids
                    if k in ctx.library.skills
                ],
            )
        )
    gates = plan_gates(plan.steps, ctx.library, snapshot.profile)
    return CompiledPlan(
        mission=plan.mission,
        run_inputs=plan.run_inputs,
        parameters=plan.parameters,
        steps=plan.steps,
        library_snapshot_hash=plan.library_snapshot_hash,
        plan_hash=plan.plan_hash,
        profile_snapshot=snapshot,
        dispatch_packets=packets,
        gates=gates,
        warnings=plan.warnings,
    )
