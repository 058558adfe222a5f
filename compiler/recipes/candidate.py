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


def with_verification(plan: RecipePlan, policy: EffortPolicy, library: RecipeLibrary) -> RecipePlan:
    """Ultra effort: append the policy's verify recipe as a last `uses:` step (seed 004 §7.3)."""
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
        prose=f"Run {slug} on everything this plan produced: {recipe.summary}",
        directives=Directives(done_when="the independent verification reports", uses=slug),
        source=slug,
        source_owner=recipe.owner,
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
        if d.uses is not None:
            base.update(kind="recipe", uses_recipe=d.uses)
        elif d.invoke_skill is not None:
            # The skill's output schema binds the step's output, so it is JSON.
            base["invoke_skill"] = d.invoke_skill
            base["expected_outputs"] = [{"path": f"output/{key}.json", "role": "primary"}]
        else:
            base["expected_outputs"] = [{"path": f"output/{key}.md", "role": "primary"}]
        steps.append(base)
    return PlannerCandidate.model_validate({"mission": mission, "steps": steps})
