"""Pass D skill discovery and governance: ranking, autoload modes, denials, choices, re-checks."""

from __future__ import annotations

from typing import Any

import pytest

from compiler.hashing import sha256_text
from compiler.plan.discovery import (
    choose_skills,
    discover_skills,
    governance_refusal,
    required_skill_problems,
    step_text,
)
from schemas.compiled import CompiledStep
from schemas.profile import PinnedSkill, SkillPolicy
from schemas.skills import SkillCandidate, SkillPackage
from tests.compiler.conftest import _library, compile_raw
from tests.compiler.plans import plan, step


def skill(skill_id: str, description: str, instructions: str = "", **kw: Any) -> SkillPackage:
    return SkillPackage(
        skill_id=skill_id,
        description=description,
        instructions=instructions,
        sha256=sha256_text(skill_id + description + instructions),
        source=f"test/{skill_id}/SKILL.md",
        **kw,
    )


HTML_REPORT = skill(
    "html-report-generator",
    "Render structured findings into a styled, self-contained HTML report with charts, "
    "themes and templates; validate it and convert it to PDF.",
    "Call scripts/render_report.py with the content JSON; pick a template and a theme.",
)
WEB_RESEARCH = skill(
    "general-web-research",
    "Search the web and summarize sources with citations.",
    "Use http.request through the bridge; record every source.",
)
SLIDES = skill("slide-deck-builder", "Build a slide deck presentation from an outline.")
CHARTS = skill(
    "data-analysis-toolkit",
    "Aggregate tables, compute statistics and draw charts for a report.",
    "Use pandas; write charts as PNG.",
)
OLD = skill(
    "legacy-report-writer", "Write an HTML report the old way.", deprecated=True
)  # would rank high if deprecation were ignored


def library(*extra: SkillPackage) -> dict[str, SkillPackage]:
    """The real stdlib skills plus the given packages."""
    found = dict(_library().skills)
    found.update({s.skill_id: s for s in extra})
    return found


ALL = library(WEB_RESEARCH, SLIDES, CHARTS, OLD)
# The curated stdlib package when the stdlib ships one; this stand-in otherwise.
ALL.setdefault(HTML_REPORT.skill_id, HTML_REPORT)
REPORT_SHA = ALL[HTML_REPORT.skill_id].sha256


@pytest.fixture(scope="module")
def report_step() -> CompiledStep:
    raw = plan(
        step(
            "report",
            label="Publish the audit report",
            objective="Render the reconciliation findings as an HTML report for the client.",
            success_criteria="a styled HTML report with a summary table and a chart",
            out="output/audit_report.html",
        )
    )
    return compile_raw(raw).steps[0]


@pytest.fixture(scope="module")
def csv_step() -> CompiledStep:
    raw = plan(
        step(
            "profile",
            label="Profile the time entries",
            objective="Profile the CSV of time entries: columns, types and empty cells.",
            out="output/profile.json",
        )
    )
    return compile_raw(raw).steps[0]


def ids(candidates: list[SkillCandidate]) -> list[str]:
    return [c.skill_id for c in candidates]


# ---- ranking ----------------------------------------------------------------------------------


def test_report_step_ranks_the_html_report_generator_first(report_step: CompiledStep) -> None:
    found = discover_skills(report_step, ALL, SkillPolicy(autoload_mode="discovery_only"))
    assert found[0].skill_id == "html-report-generator"
    assert found[0].sha256 == REPORT_SHA and found[0].pinned is None
    assert any("id 'html'" in r or "id 'report'" in r for r in found[0].reasons)
    assert "legacy-report-writer" not in ids(found)  # deprecated: never discovered
    assert "slide-deck-builder" not in ids(found)  # no evidence at all


def test_csv_step_ranks_the_real_stdlib_csv_profile_first(csv_step: CompiledStep) -> None:
    found = discover_skills(csv_step, ALL, SkillPolicy())
    assert found[0].skill_id == "csv-profile"
    assert "html-report-generator" not in ids(found[:1])


def test_the_contract_text_covers_outputs_and_their_kinds(report_step: CompiledStep) -> None:
    text = step_text(report_step)
    assert "output/audit_report.html" in text and "report.html" in text
    assert "Publish the audit report" in text


def test_order_is_deterministic_score_then_id(report_step: CompiledStep) -> None:
    policy = SkillPolicy(autoload_mode="discovery_only")
    first = discover_skills(report_step, ALL, policy, limit=10)
    again = discover_skills(report_step, dict(reversed(list(ALL.items()))), policy, limit=10)
    assert first == again
    assert [(-c.score, c.skill_id) for c in first] == sorted((-c.score, c.skill_id) for c in first)


def test_a_recommended_skill_gets_a_lift(csv_step: CompiledStep) -> None:
    recommended = csv_step.model_copy(update={"recommended_skill_ids": ["duplicate-finder"]})
    found = discover_skills(recommended, ALL, SkillPolicy(), limit=10)
    lifted = next(c for c in found if c.skill_id == "duplicate-finder")
    plain = {c.skill_id: c.score for c in discover_skills(csv_step, ALL, SkillPolicy(), limit=10)}
    assert (
        lifted.score == plain.get("duplicate-finder", 0.0) + 5.0 or "duplicate-finder" not in plain
    )
    assert any("recommended" in r for r in lifted.reasons)


def test_limit_caps_discovery_and_rejects_negative(report_step: CompiledStep) -> None:
    assert len(discover_skills(report_step, ALL, SkillPolicy(), limit=1)) == 1
    assert discover_skills(report_step, ALL, SkillPolicy(), limit=0) == []
    with pytest.raises(ValueError, match="limit"):
        discover_skills(report_step, ALL, SkillPolicy(), limit=-1)


# ---- autoload modes -------------------------------------------------------------------------

PINS = [
    PinnedSkill(skill_id="slide-deck-builder", priority="required", scope="executor"),
    PinnedSkill(skill_id="data-analysis-toolkit", priority="preferred", scope="both"),
    PinnedSkill(skill_id="duplicate-finder", priority="preferred", scope="planner"),
]


def test_profile_only_offers_the_pins_of_the_scope_alone(report_step: CompiledStep) -> None:
    policy = SkillPolicy(pinned_skills=PINS, autoload_mode="profile_only")
    found = discover_skills(report_step, ALL, policy)
    assert ids(found) == ["slide-deck-builder", "data-analysis-toolkit"]
    assert [c.pinned for c in found] == ["required", "preferred"]
    assert "pinned required" in found[0].reasons[0]
    planner = discover_skills(report_step, ALL, policy, scope="planner")
    assert ids(planner) == ["data-analysis-toolkit", "duplicate-finder"]


def test_discovery_only_keeps_required_pins_and_ignores_preferred(
    report_step: CompiledStep,
) -> None:
    policy = SkillPolicy(pinned_skills=PINS, autoload_mode="discovery_only")
    found = discover_skills(report_step, ALL, policy)
    assert found[0].skill_id == "slide-deck-builder" and found[0].pinned == "required"
    assert found[1].skill_id == "html-report-generator"
    toolkit = [c for c in found if c.skill_id == "data-analysis-toolkit"]
    assert all(c.pinned is None for c in toolkit)  # only as a discovered skill, if at all


def test_profile_plus_discovery_puts_pins_first_then_discovery(report_step: CompiledStep) -> None:
    policy = SkillPolicy(pinned_skills=PINS, autoload_mode="profile_plus_discovery")
    found = discover_skills(report_step, ALL, policy, limit=4)
    assert ids(found)[:3] == [
        "slide-deck-builder",
        "data-analysis-toolkit",
        "html-report-generator",
    ]
    assert len(found) == 4
    assert len(set(ids(found))) == len(found)
    # pins are never cut by the limit
    assert ids(discover_skills(report_step, ALL, policy, limit=1)) == ids(found)[:2]


def test_a_pin_repeated_as_required_counts_as_required(report_step: CompiledStep) -> None:
    pins = [
        PinnedSkill(skill_id="slide-deck-builder", priority="preferred"),
        PinnedSkill(skill_id="csv-profile", priority="required"),
        PinnedSkill(skill_id="slide-deck-builder", priority="required"),
    ]
    found = discover_skills(report_step, ALL, SkillPolicy(pinned_skills=pins))
    assert [(c.skill_id, c.pinned) for c in found[:2]] == [
        ("slide-deck-builder", "required"),
        ("csv-profile", "required"),
    ]


def test_unknown_and_deprecated_pins_are_not_offered(report_step: CompiledStep) -> None:
    pins = [
        PinnedSkill(skill_id="no-such-skill", priority="preferred"),
        PinnedSkill(skill_id="legacy-report-writer", priority="preferred"),
    ]
    found = discover_skills(
        report_step, ALL, SkillPolicy(pinned_skills=pins, autoload_mode="profile_only")
    )
    assert found == []


# ---- denial -----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["profile_only", "discovery_only", "profile_plus_discovery"])
def test_denied_skills_never_appear(report_step: CompiledStep, mode: str) -> None:
    policy = SkillPolicy.model_validate(
        {
            "pinned_skills": [
                {"skill_id": "html-report-generator", "priority": "required"},
                {"skill_id": "data-analysis-toolkit", "priority": "preferred"},
            ],
            "denied_skills": ["html-report-generator", "data-analysis-toolkit"],
            "autoload_mode": mode,
        }
    )
    found = discover_skills(report_step, ALL, policy, limit=50)
    assert not {"html-report-generator", "data-analysis-toolkit"} & set(ids(found))


# ---- required pins ----------------------------------------------------------------------------


def test_required_missing_and_denied_pins_are_diagnostics() -> None:
    policy = SkillPolicy(
        pinned_skills=[
            PinnedSkill(skill_id="csv-profile", priority="required"),
            PinnedSkill(skill_id="no-such-skill", priority="required"),
            PinnedSkill(skill_id="maybe-later", priority="preferred"),
            PinnedSkill(skill_id="general-web-research", priority="preferred"),
            PinnedSkill(skill_id="legacy-report-writer", priority="required", scope="planner"),
        ],
        denied_skills=["general-web-research"],
    )
    problems = required_skill_problems(policy, ALL)
    assert [(d.code, d.field) for d in problems] == [
        ("E_REQUIRED_SKILL_MISSING", "skill_policy.pinned_skills[1]"),
        ("E_SKILL_DENIED_AND_PINNED", "skill_policy.pinned_skills[3]"),
        ("E_SKILL_DEPRECATED", "skill_policy.pinned_skills[4]"),
    ]
    missing, denied, deprecated = problems
    assert "'no-such-skill'" in missing.message
    assert "forge skills register" in missing.hint and "csv-profile" in missing.hint
    assert "'general-web-research'" in denied.message and "denied_skills" in denied.hint
    assert "'legacy-report-writer'" in deprecated.message and deprecated.hint


def test_a_satisfiable_policy_has_no_problems() -> None:
    policy = SkillPolicy(
        pinned_skills=[PinnedSkill(skill_id="csv-profile", priority="required")],
        denied_skills=["general-web-research"],
    )
    assert required_skill_problems(policy, ALL) == []
    assert required_skill_problems(SkillPolicy(), {}) == []


# ---- the model's choice -----------------------------------------------------------------------


def test_choose_skills_drops_hallucinated_ids_and_keeps_required(
    report_step: CompiledStep,
) -> None:
    policy = SkillPolicy(
        pinned_skills=[PinnedSkill(skill_id="csv-profile", priority="required")],
    )
    candidates = discover_skills(report_step, ALL, policy)
    assert candidates[0].skill_id == "csv-profile"
    chosen, warnings = choose_skills(
        candidates,
        ["html-report-generator", "made-up-skill", "html-report-generator", "legacy-report-writer"],
    )
    assert chosen == ["csv-profile", "html-report-generator"]
    assert len(warnings) == 2
    assert "'made-up-skill'" in warnings[0] and "dropped" in warnings[0]
    assert "'legacy-report-writer'" in warnings[1]
    assert choose_skills(candidates, []) == (["csv-profile"], [])
    assert choose_skills([], ["x"])[0] == []


# ---- the runtime re-check ---------------------------------------------------------------------


def test_governance_refusal_cases() -> None:
    policy = SkillPolicy(denied_skills=["general-web-research"])
    assert governance_refusal("html-report-generator", policy, ALL) is None
    ok = governance_refusal("html-report-generator", policy, ALL, bound_sha256=REPORT_SHA)
    assert ok is None
    denied = governance_refusal("general-web-research", policy, ALL)
    assert denied is not None and "denied" in denied and "general-web-research" in denied
    unknown = governance_refusal("ghost-skill", policy, ALL)
    assert unknown is not None and "not in the skill library" in unknown
    deprecated = governance_refusal("legacy-report-writer", policy, ALL)
    assert deprecated is not None and "deprecated" in deprecated
    changed = governance_refusal(
        "html-report-generator", policy, ALL, bound_sha256="sha256:" + "0" * 64
    )
    assert changed is not None and "recompile" in changed and REPORT_SHA in changed
    # denial wins even over a skill the library does not hold
    assert "denied" in (governance_refusal("general-web-research", policy, {}) or "")
