"""The model halves of Pass B and Pass D: a model decides only among what the compiler offers.

Pass B: steps the deterministic resolver left ambiguous or unresolved go to the resolver binding
(planner_phase_bindings.pass_b), which picks domain and workflow packs from the catalogue; ids
outside the library are dropped, and the step is resolved again with the model's packs pinned.
Pass D: for each model-written step, discovery offers candidate skills; the skill resolver
binding (pass_d) chooses among them; anything else it names is dropped with a warning. Both
answers are imprinting templates whose enums are exactly the offered ids.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from jsonschema import Draft202012Validator

from activities.models.gateway import ModelGateway
from compiler.context import compile_context
from compiler.imprint import (
    TemplateError,
    parse_json,
    render_template,
    schema_to_template,
    template_to_payload,
)
from compiler.plan.context import CompileContext
from compiler.plan.passes.resolve import resolve
from compiler.plan.planner import catalogue
from schemas.budget import Usage
from schemas.context import Block, ContextPack, InvokeRequest, RunContext
from schemas.models import CallScope, Message, ModelRequest, TextBlock
from schemas.plan import PlannerCandidate, ResolvedPlan
from schemas.profile import ConsumerBinding
from schemas.skills import SkillCandidate

WEAK = ("ambiguous", "unresolved")


def _ask(
    gateway: ModelGateway,
    pack: ContextPack,
    binding: ConsumerBinding,
    run_context: RunContext,
    scope: CallScope,
    *,
    intent: str,
    message: str,
    schema: dict[str, Any],
    sections: list[Block],
    spent: list[Usage],
) -> dict[str, Any] | None:
    """One templated question; the validated answer, or None when it does not fit the schema.

    What the call spent is appended to `spent` (whether or not the answer fits).
    """
    template = render_template(schema_to_template(schema))
    context = compile_context(
        pack,
        run_context,
        InvokeRequest(
            intent_id=intent,
            message=message,
            sections=[Block(kind="template", text=template, priority=100), *sections],
        ),
    )
    o = binding.runtime_overrides
    consumer = "resolver" if intent == "forge.resolve" else "skill_resolver"
    result = gateway.call(
        ModelRequest(
            model=binding.model_binding_ref,
            consumer=consumer,
            system=context.system_prompt,
            messages=[Message(role="user", content=[TextBlock(text=context.task_prompt)])],
            max_tokens=o.max_tokens or 2048,
            temperature=o.temperature,
            thinking_budget_tokens=o.thinking_budget_tokens if o.use_extended_thinking else None,
        ),
        scope,
        context=context,
    )
    spent.append(result.usage())
    try:
        payload = template_to_payload(parse_json(result.response.text), schema)
    except (TemplateError, ValueError):
        return None
    if any(Draft202012Validator(schema).iter_errors(payload)):
        return None
    return payload if isinstance(payload, dict) else None


def resolve_weak_steps(
    candidate: PlannerCandidate,
    resolved: ResolvedPlan,
    *,
    ctx: CompileContext,
    gateway: ModelGateway,
    pack: ContextPack,
    binding: ConsumerBinding,
    run_context: RunContext,
    scope: CallScope,
    spent: list[Usage],
) -> ResolvedPlan:
    """Pass B's model fallback for the steps the deterministic resolver could not settle."""
    weak = [s for s in resolved.steps if s.resolution_status in WEAK]
    if not weak:
        return resolved
    lib = ctx.library
    domains, workflows = sorted(lib.domain_packs), sorted(lib.workflow_packs)
    schema = {
        "type": "object",
        "required": ["steps"],
        "properties": {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["step_key", "domain_pack_id", "workflow_pack_id", "confidence"],
                    "properties": {
                        "step_key": {"enum": [s.step_key for s in weak]},
                        "domain_pack_id": {"enum": domains},
                        "workflow_pack_id": {"enum": workflows},
                        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                        "reason": {"type": "string"},
                    },
                },
            }
        },
    }
    steps_text = "\n".join(
        f"- {s.step_key}: {s.label}. {s.objective} (deterministic resolver: {s.reason})"
        for s in weak
    )
    answer = _ask(
        gateway,
        pack,
        binding,
        run_context,
        scope,
        intent="forge.resolve",
        message="Choose the domain pack and workflow pack for each step below.",
        schema=schema,
        sections=[
            Block(kind="steps", text="Steps to resolve:\n" + steps_text, priority=95),
            Block(kind="catalogue", text=catalogue(lib), priority=60),
        ],
        spent=spent,
    )
    if answer is None:
        return resolved.model_copy(
            update={
                "steps": [
                    s.model_copy(
                        update={
                            "warnings": [
                                *s.warnings,
                                "the resolver model's answer did not fit its template; the "
                                "deterministic resolution stands",
                            ]
                        }
                    )
                    if s.resolution_status in WEAK
                    else s
                    for s in resolved.steps
                ]
            }
        )
    chosen = {a["step_key"]: a for a in answer["steps"]}
    pinned = candidate.model_copy(
        update={
            "steps": [
                s.model_copy(
                    update={
                        "domain_pack_ids": [chosen[s.step_key]["domain_pack_id"]],
                        "workflow_pack_ids": [chosen[s.step_key]["workflow_pack_id"]],
                    }
                )
                if s.step_key in chosen
                else s
                for s in candidate.steps
            ]
        }
    )
    again = resolve(pinned, ctx=ctx)
    steps = []
    for s in again.steps:
        pick = chosen.get(s.step_key)
        if pick is not None:
            s = s.model_copy(
                update={
                    "resolution_status": "resolved",
                    "confidence": float(pick["confidence"]),
                    "reason": f"resolved by the model ({binding.model_binding_ref}): "
                    f"{pick.get('reason') or 'no reason given'}; {s.reason}",
                }
            )
        steps.append(s)
    return again.model_copy(update={"steps": steps})


def choose_skills_by_model(
    offered: Mapping[str, list[SkillCandidate]],
    *,
    gateway: ModelGateway,
    pack: ContextPack,
    binding: ConsumerBinding,
    run_context: RunContext,
    scope: CallScope,
    step_texts: Mapping[str, str],
    spent: list[Usage],
) -> dict[str, list[str]]:
    """Pass D's model half: for each step, the skill ids chosen among those offered."""
    asked = {k: v for k, v in offered.items() if v}
    if not asked:
        return {}
    schema = {
        "type": "object",
        "required": ["steps"],
        "properties": {
            "steps": {
                "type": "array",
                "items": {
                    "type": "object",
                    "required": ["step_key", "skill_ids"],
                    "properties": {
                        "step_key": {"enum": sorted(asked)},
                        # Any string: an id discovery did not offer is dropped by
                        # choose_skills with a warning, without losing the rest of the answer.
                        "skill_ids": {"type": "array", "items": {"type": "string"}},
                    },
                },
            }
        },
    }
    offers = "\n".join(
        f"- {k}: {step_texts.get(k, '')}\n  offered: "
        + json.dumps([{"skill_id": c.skill_id, "why": c.reasons[:3]} for c in v])
        for k, v in sorted(asked.items())
    )
    answer = _ask(
        gateway,
        pack,
        binding,
        run_context,
        scope,
        intent="forge.skills",
        message="For each step, choose the skills (only among those offered) that help it "
        "fulfil its contract; choose none when none helps.",
        schema=schema,
        sections=[Block(kind="offers", text="Steps and offered skills:\n" + offers, priority=95)],
        spent=spent,
    )
    if answer is None:
        return {}
    return {a["step_key"]: list(a["skill_ids"]) for a in answer["steps"]}
