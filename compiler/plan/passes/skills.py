"""Pass D, deterministic part: tools, execution mode and `invoke skill:` bindings; re-hashed.

A step that invokes a skill is bound to that skill's package: its id, the sha256 of the SKILL.md
and output schema as loaded, and the output schema itself, all sealed into the contract hash. A
missing or deprecated skill fails the compile (fails closed): the step never degrades into a
free-form step. A model-written step gets the skills discovery offers it (compiler.plan.discovery)
that the skill resolver model chose, or, without a model, the profile's pinned skills.
"""

from collections.abc import Mapping, Sequence

from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, resolve_profile
from compiler.plan.contracts.finalize import rehash
from compiler.plan.discovery import choose_skills, discover_skills, required_skill_problems
from compiler.plan.passes.contracts import plan_hash
from compiler.plan.text import intent_words
from schemas.compiled import Backend, CompiledStep, ContractPlan
from schemas.diagnostics import Diagnostic
from schemas.skills import SkillCandidate

TOOLS_BY_BACKEND: dict[Backend, list[str]] = {
    "sandbox.frozen": ["log.note", "artifact.evaluate"],
    "sandbox.session": ["sandbox.session", "log.note", "artifact.evaluate", "http.request"],
    "evaluator": ["artifact.evaluate"],
    "gate": [],
    "child_workflow": [],
}


def skill_candidates(plan: ContractPlan, *, ctx: CompileContext) -> dict[str, list[SkillCandidate]]:
    """What discovery offers each model-written step (the model may choose only among these)."""
    policy = resolve_profile(ctx).profile.skill_policy
    words = intent_words(len(plan.steps))
    return {
        s.step_key: discover_skills(s, ctx.library.skills, policy, words=words)
        for s in plan.steps
        if s.backend == "sandbox.session" and s.invoke_skill is None
    }


def skills(
    plan: ContractPlan,
    *,
    ctx: CompileContext,
    choices: Mapping[str, Sequence[str]] | None = None,
) -> ContractPlan:
    """Bind allowed tools, execution mode and skills to every step and re-seal its contract.

    A model-written step is bound to the skills chosen for it (`choices`, the skill resolver's
    answer) among what discovery offered; without a choice, to the profile's pins that
    discovery offered. Required pins are always bound; ids discovery did not offer are dropped
    with a warning. Each bound skill's digest is sealed into the contract.
    """
    policy = resolve_profile(ctx).profile.skill_policy
    problems: list[Diagnostic] = required_skill_problems(policy, ctx.library.skills)
    warnings = list(plan.warnings)
    offered = skill_candidates(plan, ctx=ctx)
    steps = []
    for s in plan.steps:
        update: dict[str, object] = {
            "allowed_tool_ids": list(TOOLS_BY_BACKEND[s.backend]),
            "execution_mode": s.kind,
        }
        if s.invoke_skill is not None:
            problems += _skill_problems(s, ctx)
            skill = ctx.library.skills.get(s.invoke_skill)
            if skill is not None:
                update.update(
                    recommended_skill_ids=[skill.skill_id],
                    skill_sha256=skill.sha256,
                    skill_output_schema=skill.output_schema,
                    skill_digests={skill.skill_id: skill.sha256},
                )
        elif s.step_key in offered:
            candidates = offered[s.step_key]
            wanted = (choices or {}).get(s.step_key)
            if wanted is None:
                wanted = [c.skill_id for c in candidates if c.pinned is not None]
            bound, dropped = choose_skills(candidates, wanted)
            warnings += [f"step {s.step_key}: {w}" for w in dropped]
            update.update(
                recommended_skill_ids=bound,
                skill_digests={k: ctx.library.skills[k].sha256 for k in bound},
            )
        steps.append(rehash(s.model_copy(update=update)))
    if problems:
        raise CompilerError(problems)
    return plan.model_copy(
        update={
            "steps": steps,
            "plan_hash": plan_hash(plan.mission, steps),
            "warnings": warnings,
        }
    )


def _skill_problems(step: CompiledStep, ctx: CompileContext) -> list[Diagnostic]:
    skill_id = step.invoke_skill
    skill = ctx.library.skills.get(skill_id or "")
    known = ", ".join(sorted(ctx.library.skills)) or "none loaded"
    if skill is None:
        return [
            Diagnostic(
                code="E_UNKNOWN_SKILL",
                message=f"step invokes skill {skill_id!r}, which is not in the skill library",
                hint=f"name a skill from stdlib/skills or a pack's skills/ ({known})",
                step_key=step.step_key,
                field="invoke_skill",
            )
        ]
    if skill.deprecated:
        return [
            Diagnostic(
                code="E_SKILL_DEPRECATED",
                message=f"skill {skill_id!r} is deprecated; a step may not invoke it",
                hint="invoke its replacement (see the skill's SKILL.md) or remove the step",
                step_key=step.step_key,
                field="invoke_skill",
            )
        ]
    json_outputs = [p for p in step.executable_contract_v2.write_paths if p.endswith(".json")]
    if skill.output_schema is not None and not json_outputs:
        return [
            Diagnostic(
                code="E_SKILL_OUTPUT",
                message=f"skill {skill_id!r} declares a JSON output schema but the step writes no "
                ".json output",
                hint="add an expected output such as output/<step>.json",
                step_key=step.step_key,
                field="expected_outputs",
            )
        ]
    return []
