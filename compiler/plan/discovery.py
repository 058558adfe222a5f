"""Pass D skill discovery and governance (seed 000 §5.5, §7.3, §7.4, §9.6), pure.

The system discovers, the model selects: `discover_skills` ranks the skill library against one
compiled step contract with the recipe matcher's lexical machinery (compiler.recipes.text and
index: the same tokens, stems, prefixes and one-edit fuzz), under the profile's skill policy;
`choose_skills` keeps only what a model chose from those candidates; `required_skill_problems`
turns an unsatisfiable policy into compile diagnostics; `governance_refusal` is the runtime's
re-check before a package is materialized. Denied skills never appear, whatever else says so.
"""

from collections.abc import Iterable, Mapping
from typing import Literal

from compiler.plan.text import INTENT_WORDS
from compiler.recipes.index import PromptKeys, WordKeys
from compiler.recipes.text import tokens
from schemas.compiled import CompiledStep
from schemas.diagnostics import Diagnostic
from schemas.profile import PinnedSkill, SkillPolicy
from schemas.skills import SkillCandidate, SkillPackage

__all__ = [
    "MIN_SCORE",
    "choose_skills",
    "discover_skills",
    "governance_refusal",
    "required_skill_problems",
    "step_text",
]

Scope = Literal["executor", "planner"]
Priority = Literal["required", "preferred"]

ID_EXACT, ID_FUZZY, DESCRIPTION_FUZZY, INSTRUCTIONS_FUZZY = 3.0, 2.0, 1.0, 0.5
# Long instructions would otherwise outscore a precise id and description by sheer length.
INSTRUCTIONS_CAP = 3.0
RECOMMENDED = 5.0
# One stray instruction word is not evidence: a discovered skill needs at least this much.
MIN_SCORE = 1.0
# Words every contract carries (workspace prefixes, the compiler's own phrasing): no signal.
_CONTRACT_NOISE = frozenset(
    {"output", "outputs", "input", "inputs", "work", "must", "produce", "produces", "step"}
)


def step_text(step: CompiledStep) -> str:
    """The contract text a skill is ranked against: what the step must produce, and how."""
    parts = [step.label, step.objective, step.success_criteria]
    for out in step.expected_outputs:
        parts.append(out.path)
        contract = step.resolved_artifact_contracts.get(out.path)
        if contract is not None and contract.kind_key:
            parts.append(contract.kind_key)
    parts += [io.kind_key for io in step.compiled_step_contract_v1.outputs]
    hints = step.semantic_hints
    parts += [*hints.domain_terms, *hints.workflow_terms, *hints.policy_terms]
    return " ".join(parts)


def discover_skills(
    step: CompiledStep,
    skills: Mapping[str, SkillPackage],
    policy: SkillPolicy,
    *,
    limit: int = 5,
    scope: Scope = "executor",
    words: int = INTENT_WORDS,
) -> list[SkillCandidate]:
    """The skills a model may choose from for `step`, pinned ones first, then the best ranked.

    Only non-deprecated, non-denied skills of `skills` are considered. `autoload_mode`:
    profile_only offers the pins of `scope` alone; discovery_only offers the required pins of
    `scope` (they must resolve) and ranked discovery; profile_plus_discovery offers every pin
    of `scope`, then ranked discovery. Pins are never cut; discovered skills fill the list up
    to `limit`, best score first, ties by id, and only with a score of at least MIN_SCORE.
    The step's text is read for its first `words` words (intent_words: a bounded reading).

    Raises:
        ValueError: `limit` is negative.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    denied = set(policy.denied_skills)
    usable = {k: v for k, v in skills.items() if k not in denied and not v.deprecated}
    read = tokens(step_text(step), words)  # the step's first `words` words (compiler/plan/text)
    prompt = PromptKeys.of(" ".join(t for t in read if t not in _CONTRACT_NOISE))
    recommended = {*step.recommended_skill_ids, *([step.invoke_skill] if step.invoke_skill else [])}
    pins = _pins(policy, scope)
    if policy.autoload_mode == "discovery_only":
        pins = {k: p for k, p in pins.items() if p.priority == "required"}
    pinned: list[SkillCandidate] = []
    for skill_id, pin in pins.items():
        if skill_id in usable:
            score, reasons = _score(prompt, usable[skill_id], recommended)
            why = f"pinned {pin.priority} by the profile's skill policy (scope {pin.scope})"
            pinned.append(_candidate(usable[skill_id], score, [why, *reasons], pin.priority))
    if policy.autoload_mode == "profile_only":
        return pinned
    ranked = []
    for skill_id in sorted(usable.keys() - pins.keys()):
        score, reasons = _score(prompt, usable[skill_id], recommended)
        if score >= MIN_SCORE:
            ranked.append(_candidate(usable[skill_id], score, reasons, None))
    ranked.sort(key=lambda c: (-c.score, c.skill_id))
    return pinned + ranked[: max(0, limit - len(pinned))]


def required_skill_problems(
    policy: SkillPolicy, skills: Mapping[str, SkillPackage]
) -> list[Diagnostic]:
    """Every way the skill policy cannot hold for this library, in policy order.

    A pinned skill that is also denied (E_SKILL_DENIED_AND_PINNED, any priority); a required
    pin the library does not hold (E_REQUIRED_SKILL_MISSING) or holds deprecated
    (E_SKILL_DEPRECATED). Preferred pins that are missing are best-effort: not a problem.
    """
    denied = set(policy.denied_skills)
    known = ", ".join(sorted(skills)) or "none loaded"
    problems: list[Diagnostic] = []
    for i, pin in enumerate(policy.pinned_skills):
        where = f"skill_policy.pinned_skills[{i}]"
        skill = skills.get(pin.skill_id)
        if pin.skill_id in denied:
            problems.append(
                Diagnostic(
                    code="E_SKILL_DENIED_AND_PINNED",
                    message=f"skill {pin.skill_id!r} is pinned ({pin.priority}) and also listed "
                    "in skill_policy.denied_skills of the execution profile",
                    hint=f"remove {pin.skill_id!r} from skill_policy.denied_skills or from "
                    "skill_policy.pinned_skills: a denied skill can never be loaded",
                    field=where,
                )
            )
        elif pin.priority == "required" and skill is None:
            problems.append(
                Diagnostic(
                    code="E_REQUIRED_SKILL_MISSING",
                    message=f"skill {pin.skill_id!r} is pinned as required by the execution "
                    "profile but is not in the skill library",
                    hint=f"register it (`forge skills register DIR`), add it to stdlib/skills or "
                    f"a pack's skills/, or unpin it; known skills: {known}",
                    field=where,
                )
            )
        elif pin.priority == "required" and skill is not None and skill.deprecated:
            problems.append(
                Diagnostic(
                    code="E_SKILL_DEPRECATED",
                    message=f"skill {pin.skill_id!r} is pinned as required by the execution "
                    "profile but is deprecated",
                    hint="pin its replacement (see the skill's SKILL.md) or unpin it",
                    field=where,
                )
            )
    return problems


def choose_skills(
    candidates: Iterable[SkillCandidate], chosen_ids: Iterable[str]
) -> tuple[list[str], list[str]]:
    """Validate a model's choice: (skill ids to bind, warnings about what was dropped).

    Only ids among the candidates survive; anything else (an id the model invented, or one
    discovery did not offer) is dropped with a warning. Required pins are always bound, first,
    in candidate order; then the model's choices in its order, without repeats.
    """
    offered = list(candidates)
    by_id = {c.skill_id: c for c in offered}
    chosen = [c.skill_id for c in offered if c.pinned == "required"]
    warnings: list[str] = []
    for skill_id in chosen_ids:
        if skill_id not in by_id:
            warnings.append(
                f"the model chose skill {skill_id!r}, which discovery did not offer for this "
                f"step (offered: {', '.join(by_id) or 'none'}); it was dropped"
            )
        elif skill_id not in chosen:
            chosen.append(skill_id)
    return chosen, warnings


def governance_refusal(
    skill_id: str,
    policy: SkillPolicy,
    skills: Mapping[str, SkillPackage],
    *,
    bound_sha256: str | None = None,
) -> str | None:
    """Why the runtime must not materialize `skill_id` now, or None when it may.

    Checked in order: denied by the policy, unknown to the library, deprecated, and (when
    `bound_sha256` is given) a package that no longer matches the digest sealed in the contract.
    """
    if skill_id in policy.denied_skills:
        return (
            f"skill {skill_id!r} is denied by the execution profile's skill_policy.denied_skills; "
            "remove it from the step's bindings or from the denied list, then recompile"
        )
    skill = skills.get(skill_id)
    if skill is None:
        return (
            f"skill {skill_id!r} is not in the skill library this worker loaded; register it "
            "(`forge skills register DIR`) or add it to stdlib/skills, then recompile"
        )
    if skill.deprecated:
        return (
            f"skill {skill_id!r} is deprecated; bind its replacement (see its SKILL.md) and "
            "recompile"
        )
    if bound_sha256 is not None and skill.sha256 != bound_sha256:
        return (
            f"skill {skill_id!r} changed since the contract was compiled: the library holds "
            f"{skill.sha256}, the contract is bound to {bound_sha256}; recompile the plan to bind "
            "the current package (a frozen contract never follows a changed skill)"
        )
    return None


def _pins(policy: SkillPolicy, scope: Scope) -> dict[str, PinnedSkill]:
    """The pins that apply to `scope`, required before preferred, each in policy order."""
    found: dict[str, PinnedSkill] = {}
    for pin in policy.pinned_skills:
        if pin.scope not in (scope, "both"):
            continue
        first = found.get(pin.skill_id)
        if first is None:
            found[pin.skill_id] = pin
        elif pin.priority == "required" and first.priority != "required":
            found[pin.skill_id] = first.model_copy(update={"priority": "required"})
    order = sorted(found.values(), key=lambda p: p.priority != "required")  # stable
    return {p.skill_id: p for p in order}


def _score(
    prompt: PromptKeys, skill: SkillPackage, recommended: set[str]
) -> tuple[float, list[str]]:
    """Lexical evidence for `skill` in the step contract, and what scored."""
    score, reasons = 0.0, []
    if skill.skill_id in recommended:
        score += RECOMMENDED
        reasons.append(f"recommended by the step +{RECOMMENDED:g}")
    for word in dict.fromkeys(w for w in skill.skill_id.split("-") if w):
        keys = WordKeys.of(word)
        if prompt.equals(keys):
            score += ID_EXACT
            reasons.append(f"id '{word}' +{ID_EXACT:g}")
        elif prompt.matches(keys):
            score += ID_FUZZY
            reasons.append(f"id ~'{word}' +{ID_FUZZY:g}")
    for word in tokens(skill.description):
        if prompt.matches(WordKeys.of(word)):
            score += DESCRIPTION_FUZZY
            reasons.append(f"description ~'{word}' +{DESCRIPTION_FUZZY:g}")
    hits = [w for w in tokens(skill.instructions) if prompt.matches(WordKeys.of(w))]
    if hits:
        extra = min(INSTRUCTIONS_CAP, INSTRUCTIONS_FUZZY * len(hits))
        score += extra
        shown = ", ".join(hits[:5]) + (", ..." if len(hits) > 5 else "")
        reasons.append(f"instructions ~{len(hits)} word(s) ({shown}) +{extra:g}")
    return score, reasons


def _candidate(
    skill: SkillPackage, score: float, reasons: list[str], pinned: Priority | None
) -> SkillCandidate:
    return SkillCandidate(
        skill_id=skill.skill_id, score=score, reasons=reasons, pinned=pinned, sha256=skill.sha256
    )
