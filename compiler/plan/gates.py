"""Gates are structure, not prompts: which steps wait for a person, and on what terms."""

from compiler.errors import CompilerError
from compiler.hashing import sha256_of
from compiler.typesystem.library import TypeLibrary
from schemas.compiled import CompiledStep, GateSpec
from schemas.diagnostics import Diagnostic
from schemas.plan import ApprovalRequest
from schemas.profile import ExecutionProfile


def _why(step: CompiledStep, lib: TypeLibrary, profile: ExecutionProfile) -> str | None:
    """Why this step needs approval before it runs, or None when it does not."""
    if step.kind == "gate":
        return "a gate step"
    if step.requires_approval or step.approval is not None:
        return "the plan requires approval"
    side_effects = any(
        lib.workflow_packs[w].side_effecting
        for w in step.workflow_pack_ids
        if w in lib.workflow_packs
    )
    if side_effects and lib.policies[step.policy_profile_id].require_human_review_for_side_effects:
        return f"side-effecting step under {step.policy_profile_id}"
    if side_effects and profile.hitl.require_approval_for_side_effects:
        return "side-effecting step under the execution profile's HITL policy"
    return None


def plan_gates(
    steps: list[CompiledStep], lib: TypeLibrary, profile: ExecutionProfile
) -> list[GateSpec]:
    """One gate per dedupe key; steps sharing a key are approved (or rejected) together."""
    groups: dict[str, list[tuple[CompiledStep, ApprovalRequest, str]]] = {}
    for step in steps:
        reason = _why(step, lib, profile)
        if reason is None:
            continue
        request = step.approval or ApprovalRequest()
        key = request.dedupe_key or step.step_key
        groups.setdefault(key, []).append((step, request, reason))
    gates, problems = [], []
    for key, members in groups.items():
        roles = {r.approver_role or profile.hitl.default_approver_role for _, r, _ in members}
        if len(roles) > 1:
            problems.append(
                Diagnostic(
                    code="E_POLICY",
                    step_key=members[0][0].step_key,
                    field="approval.dedupe_key",
                    message=f"steps sharing approval key {key!r} name different approver roles: "
                    + ", ".join(sorted(roles)),
                    hint="give them one approver_role, or different dedupe keys",
                )
            )
            continue
        first_step, request, reason = members[0]
        keys = [s.step_key for s, _, _ in members]
        hashes = sorted(s.contract_hash for s, _, _ in members)
        gates.append(
            GateSpec(
                gate_id=f"gate-{key}",
                gated_step_keys=keys,
                contract_hash=hashes[0] if len(hashes) == 1 else sha256_of(hashes),
                approver_role=roles.pop(),
                prompt=request.prompt
                or (f"Approve {', '.join(keys)} before it runs: {first_step.objective}"),
                evidence=sorted(
                    {p for s, _, _ in members for p in s.executable_contract_v2.read_paths}
                ),
                deadline_s=request.deadline_s,
                on_timeout=request.on_timeout,
                escalate_to_role=request.escalate_to_role,
                dedupe_key=key,
                reminder_interval_s=profile.hitl.reminder_interval_s,
                reason=reason,
            )
        )
    if problems:
        raise CompilerError(problems)
    return gates
