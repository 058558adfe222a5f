"""A recipe plan becomes Pass A's PlannerCandidate, without a planner model call.

Each plan step becomes a model-written step whose objective is the step's prose and whose success
criteria are its done-when; it writes its result to `output/<step_key>.md` and its done-note to
`work/note.md`. Parallelism groups become dependencies (every step of a group waits for the whole
previous group). A `uses:` step becomes a kind-recipe step run as a child workflow. Packs named
in the recipe's frontmatter are pinned so Pass B need not guess.
"""

import re

from compiler.recipes.library import RecipeLibrary
from schemas.plan import PlannerCandidate
from schemas.recipes import Directives, EffortPolicy, PlanStep, RecipePlan

_NON_KEY = re.compile(r"[^a-z0-9]+")
NOTE_PATH = "work/note.md"


def step_keys(steps: list[PlanStep]) -> list[str]:
    """A readable, unique step key per plan step (from its title)."""
    keys: list[str] = []
    for step in steps:
        base = _NON_KEY.sub("_", step.title.lower()).strip("_")[:48] or f"step_{step.index + 1}"
        if not base[0].isalnum():
            base = f"s{base}"
        key, n = base, 2
        while key in keys:
            key, n = f"{base}_{n}", n + 1
        keys.append(key)
    return keys


# What the fresh-context reviewer holds every artifact to (seed 004 §9.6: EXTRACT, DOUBT).
DOUBT_RUBRIC = (
    "the artifact does what its contract says, judged from the artifact text alone",
    "every number, name and claim in the artifact is supported by the artifacts it was made from",
    "no edge case or unstated assumption invalidates the result",
)
REVIEW_CYCLES = 3  # seed 004 §9.6 STOP: trivial-only findings, or the three-cycle cap


def with_verification(plan: RecipePlan, policy: EffortPolicy, library: RecipeLibrary) -> RecipePlan:
    """Ultra effort: end the plan with the policy's verify recipe as a fresh-context review.

    The step is an `evaluate` step (seed 004 §9.6, §7.3): a separate model reviews every artifact
    the plan produced against its contract, cold, for at most REVIEW_CYCLES cycles.
    """
    slug = policy.verify_recipe
    if slug is None or slug in plan.recipes:
        return plan
    recipe = library.get(slug)
    if recipe is None:
        return plan.model_copy(
            update={"warnings": [*plan.warnings, f"verify recipe {slug!r} is not in the library"]}
        )
    step = PlanStep(
        index=len(plan.steps),
        title=f"Verify: {recipe.title}",
        prose=f"Review everything this plan produced, cold: {recipe.summary}",
        directives=Directives(done_when="a fresh-context reviewer finds no non-trivial problem"),
        source=slug,
        source_owner=recipe.owner,
        review=True,
    )
    return plan.model_copy(
        update={"steps": [*plan.steps, step], "groups": [*plan.groups, [step.index]]}
    )


def candidate_from_plan(plan: RecipePlan, library: RecipeLibrary, mission: str) -> PlannerCandidate:
    keys = step_keys(plan.steps)
    deps: dict[int, list[str]] = {}
    previous: list[int] = []
    for group in plan.groups:
        for i in group:
            deps[i] = [keys[j] for j in previous]
        previous = group
    steps = []
    for step in plan.steps:
        recipe = library.get(step.source)
        key = keys[step.index]
        d = step.directives
        objective = step.prose or step.title
        base: dict[str, object] = {
            "step_key": key,
            "label": step.title,
            "objective": objective,
            "depends_on": deps.get(step.index, []),
            "success_criteria": d.done_when,
            "source_recipe": f"{step.source_owner}/{step.source}",
            "loop": d.loop,
        }
        if recipe is not None and recipe.domain_packs:
            base["domain_pack_ids"] = recipe.domain_packs
        if recipe is not None and recipe.workflow_packs:
            base["workflow_pack_ids"] = recipe.workflow_packs
        if step.review:
            base.update(_review(key, [(keys[p.index], p) for p in plan.steps if not p.review]))
        elif d.uses is not None:
            base.update(kind="recipe", uses_recipe=d.uses)
        elif d.invoke_skill is not None:
            # The skill's output schema binds the step's output, so it is JSON.
            base["invoke_skill"] = d.invoke_skill
            base["expected_outputs"] = [{"path": output_path(key, step), "role": "primary"}]
        else:
            base["expected_outputs"] = [{"path": output_path(key, step), "role": "primary"}]
        steps.append(base)
    return PlannerCandidate.model_validate({"mission": mission, "steps": steps})


def output_path(key: str, step: PlanStep) -> str:
    """Where a producing step of a recipe plan writes its result."""
    if step.directives.invoke_skill is not None:
        return f"output/{key}.json"
    return f"output/{key}.md"


def _review(key: str, producers: list[tuple[str, PlanStep]]) -> dict[str, object]:
    """The doubt-driven review step: an evaluate step over every artifact the plan produced."""
    judged = [output_path(k, p) for k, p in producers if p.directives.uses is None]
    contract = "\n".join(
        f"- {output_path(k, p)} ({p.title}): {p.directives.done_when or p.title}"
        for k, p in producers
        if p.directives.uses is None
    )
    return {
        "kind": "evaluate",
        "depends_on": [k for k, _ in producers],
        "input_file_paths": judged,
        "expected_outputs": [{"path": f"output/{key}.verdict.json", "role": "report"}],
        "evaluation": {
            "derived": judged,
            "rubric": list(DOUBT_RUBRIC),
            "enforcement": "block",
            "cycles": REVIEW_CYCLES,
            "contract": contract,
        },
    }
