"""Pass B, deterministic part: domain packs, workflow packs and policy profile per step."""

from collections.abc import Mapping

from compiler.errors import CompilerError
from compiler.plan.context import CompileContext, resolve_profile
from compiler.plan.intent import PackText, Selection, pack_text, score_packs, select
from compiler.plan.text import contains_phrase, intent_words, stems
from compiler.typesystem.library import TypeLibrary
from schemas.diagnostics import Diagnostic
from schemas.plan import PlannerCandidate, PlannerStep, ResolvedPlan, ResolvedStep

FALLBACK_POLICY = "strict.allow-normalizers.v1"
SIDE_EFFECT_POLICY = "deploy.human-review-required.v1"
_STATUS_ORDER = {"resolved": 0, "ambiguous": 1, "unresolved": 2}


def resolve(plan: PlannerCandidate, *, ctx: CompileContext) -> ResolvedPlan:
    """Annotate every step; unknown pins are errors, weak matches are warnings."""
    lib = ctx.library
    default_policy = resolve_profile(ctx).profile.default_policy_profile_id
    problems: list[Diagnostic] = []
    texts = _texts(lib)
    limit = intent_words(len(plan.steps))
    steps = [
        _resolve_step(step, lib, texts, default_policy, problems, limit) for step in plan.steps
    ]
    if problems:
        raise CompilerError(problems)
    return ResolvedPlan(
        mission=plan.mission, run_inputs=plan.run_inputs, parameters=plan.parameters, steps=steps
    )


def _texts(lib: TypeLibrary) -> tuple[tuple[PackText, ...], tuple[PackText, ...]]:
    domains = tuple(
        pack_text(
            p.domain_pack_id, p.triggers, [p.title, p.purpose, *p.example_goals], p.disambiguation
        )
        for p in lib.domain_packs.values()
    )
    workflows = tuple(
        pack_text(
            p.workflow_pack_id, p.triggers, [p.title, p.purpose, *p.example_goals], p.disambiguation
        )
        for p in lib.workflow_packs.values()
    )
    return domains, workflows


def _step_text(step: PlannerStep, limit: int) -> tuple[str, ...]:
    h = step.semantic_hints
    parts = [step.label, step.objective, step.success_criteria, *h.domain_terms, *h.workflow_terms]
    return stems(" . ".join(parts), limit)


def _resolve_step(
    step: PlannerStep,
    lib: TypeLibrary,
    texts: tuple[tuple[PackText, ...], tuple[PackText, ...]],
    default_policy: str | None,
    problems: list[Diagnostic],
    limit: int,
) -> ResolvedStep:
    text = _step_text(step, limit)
    domains, workflows = texts
    domain = _pinned(step, "domain", step.domain_pack_ids, lib.domain_packs, problems) or select(
        score_packs(text, domains, _domain_bonus(step, lib)), "domain"
    )
    workflow = _pinned(step, "workflow", step.workflow_pack_ids, lib.workflow_packs, problems) or (
        select(score_packs(text, workflows, _workflow_bonus(step, lib)), "workflow")
    )
    policy, policy_reason = _policy(step, lib, domain, workflow, default_policy, problems)
    if step.domain_pack_ids is not None and step.workflow_pack_ids is not None:
        status, confidence = "pinned", 1.0
    else:
        status = max(domain.status, workflow.status, key=lambda s: _STATUS_ORDER.get(s, -1))
        confidence = min(domain.confidence, workflow.confidence)
    return ResolvedStep.model_validate(
        {
            **step.model_dump(),
            "domain_pack_ids": domain.pack_ids,
            "workflow_pack_ids": workflow.pack_ids,
            "policy_profile_id": policy,
            "resolution_status": status,
            "confidence": confidence,
            "reason": f"{domain.reason}; {workflow.reason}; policy {policy} ({policy_reason})",
            "warnings": [*domain.warnings, *workflow.warnings],
        }
    )


def _pinned(
    step: PlannerStep,
    family: str,
    ids: list[str] | None,
    known: Mapping[str, object],
    problems: list[Diagnostic],
) -> Selection | None:
    if ids is None:
        return None
    for pid in ids:
        if pid not in known:
            problems.append(
                Diagnostic(
                    code="E_UNKNOWN_PACK",
                    step_key=step.step_key,
                    field=f"{family}_pack_ids",
                    message=f"{family} pack {pid!r} does not exist",
                    hint=f"use one of: {', '.join(sorted(known))} (`forge packs list`)",
                )
            )
    return Selection(list(ids), "resolved", 1.0, f"{family} {', '.join(ids)} (pinned by plan)", [])


def _domain_bonus(step: PlannerStep, lib: TypeLibrary) -> dict[str, tuple[float, str]]:
    bonus: dict[str, tuple[float, str]] = {}
    ents = [i.entity_schema_id for i in step.abstract_inputs] + [
        o.entity_schema_id for o in step.abstract_outputs
    ]
    for ent in ents:
        pack = lib.entity_domain.get(ent or "")
        if pack and pack in lib.domain_packs:
            amount, _ = bonus.get(pack, (0.0, ""))
            bonus[pack] = (min(2 * 4.0, amount + 4.0), f"entity {ent}")
    for term in step.semantic_hints.domain_terms:
        if term in lib.domain_packs:
            amount, why = bonus.get(term, (0.0, ""))
            bonus[term] = (amount + 6.0, why or "hinted")
    return bonus


def _workflow_bonus(step: PlannerStep, lib: TypeLibrary) -> dict[str, tuple[float, str]]:
    bonus: dict[str, tuple[float, str]] = {}
    ins = {i.slot for i in step.abstract_inputs}
    outs = {o.slot for o in step.abstract_outputs}
    # What the outputs' extensions say about their slot (a .receipt.json is a deployment receipt).
    kinds = {k.kind_key for o in step.expected_outputs if (k := lib.kind_for_path(o.path))}
    implied = {sid for sid, sl in lib.slots.items() if kinds & set(sl.default_kind_keys)} - outs
    sources = len(step.abstract_inputs) or len(step.input_file_paths)
    for wf in lib.workflow_packs.values():
        amount = 0.75 * len(ins & set(wf.typical_slots.inputs))
        amount += 1.5 * len(outs & set(wf.typical_slots.outputs))
        amount += 0.75 * len(implied & set(wf.typical_slots.outputs)) / max(1, len(implied))
        why = "slots " + ", ".join(sorted(outs & set(wf.typical_slots.outputs))) if amount else ""
        if wf.workflow_pack_id in step.semantic_hints.workflow_terms:
            amount += 6.0
            why = why or "hinted"
        if 0 < sources < wf.min_input_sources:  # declared too few sources for this pack
            amount -= 3.0
        if amount:
            bonus[wf.workflow_pack_id] = (amount, why)
    return bonus


def _policy(
    step: PlannerStep,
    lib: TypeLibrary,
    domain: Selection,
    workflow: Selection,
    default_policy: str | None,
    problems: list[Diagnostic],
) -> tuple[str, str]:
    if step.policy_profile_id is not None:
        if step.policy_profile_id not in lib.policies:
            problems.append(
                Diagnostic(
                    code="E_POLICY",
                    step_key=step.step_key,
                    field="policy_profile_id",
                    message=f"policy profile {step.policy_profile_id!r} does not exist",
                    hint=f"use one of: {', '.join(sorted(lib.policies))}",
                )
            )
        return step.policy_profile_id, "pinned by plan"
    if any(
        lib.workflow_packs[w].side_effecting for w in workflow.pack_ids if w in lib.workflow_packs
    ):
        return SIDE_EFFECT_POLICY, "side-effecting workflow"
    for term in step.semantic_hints.policy_terms:
        if term in lib.policies:
            return term, "hinted"
        for pol in lib.policies.values():
            if any(contains_phrase(stems(term), stems(t)) for t in pol.triggers):
                return pol.policy_profile_id, f"policy term '{term}'"
    if default_policy is not None:
        return default_policy, "execution profile default"
    for pack_id in domain.pack_ids:
        if pack_id in lib.domain_packs:
            return lib.domain_packs[pack_id].default_policy_profile_id, f"default of {pack_id}"
    return FALLBACK_POLICY, "no domain resolved; library default"
