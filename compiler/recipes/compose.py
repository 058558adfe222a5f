"""BUILD_MERGED_PLAN of seed 004 §4.1: matched recipes, `composes:` inlined, steps de-duplicated.

Composed recipes' steps lead their composer's. Expansion is cycle-guarded (a recipe already
expanded is not expanded again) and depth-bounded; a step whose normalized title was already taken
is dropped, so a step shared by two recipes runs once. Every step keeps a badge naming its source.
Parallelism groups are carried over per recipe (dropped steps removed), in expansion order.
"""

import re
from collections.abc import Sequence

from compiler.recipes.library import RecipeLibrary
from schemas.recipes import PlanStep, Recipe, RecipePlan, ScoredRecipe

MAX_COMPOSE_DEPTH = 4
_NON_WORD = re.compile(r"[^a-z0-9]+")


def normalize_title(title: str) -> str:
    return _NON_WORD.sub(" ", title.lower()).strip()


def build_plan(
    matches: Sequence[ScoredRecipe | Recipe | str], library: RecipeLibrary
) -> RecipePlan:
    """One plan from the matched recipes (best first), with their `composes:` expanded."""
    steps: list[PlanStep] = []
    groups: list[list[int]] = []
    seen: set[str] = set()
    expanded: set[str] = set()
    contributions: dict[str, int] = {}
    composed: list[str] = []
    warnings: list[str] = []
    dropped = 0

    def add_from(recipe: Recipe, depth: int, stack: tuple[str, ...]) -> None:
        nonlocal dropped
        if recipe.slug in expanded:
            if recipe.slug in stack:
                warnings.append(
                    f"composes cycle {' -> '.join([*stack, recipe.slug])}: not expanded again"
                )
            return
        if depth > MAX_COMPOSE_DEPTH:
            warnings.append(
                f"{recipe.slug}: composition deeper than {MAX_COMPOSE_DEPTH} levels; not expanded"
            )
            return
        expanded.add(recipe.slug)
        for sub in recipe.composes:
            child = library.get(sub)
            if child is None:
                warnings.append(f"{recipe.slug} composes {sub!r}, which is not in the library")
                continue
            if child.slug not in expanded:
                composed.append(child.slug)
            add_from(child, depth + 1, (*stack, recipe.slug))
        local: dict[int, int] = {}
        for step in recipe.steps:
            key = normalize_title(step.title)
            if key in seen:
                dropped += 1
                continue
            seen.add(key)
            local[step.index] = len(steps)
            steps.append(
                PlanStep(
                    index=len(steps),
                    title=step.title,
                    prose=step.prose,
                    directives=step.directives,
                    source=recipe.slug,
                    source_owner=recipe.owner,
                )
            )
            contributions[recipe.slug] = contributions.get(recipe.slug, 0) + 1
        for group in recipe.groups:
            kept = [local[i] for i in group if i in local]
            if kept:
                groups.append(kept)

    roots: list[str] = []
    for m in matches:
        slug = m if isinstance(m, str) else m.slug
        recipe = library.get(slug)
        if recipe is None:
            warnings.append(f"matched recipe {slug!r} is not in the library")
            continue
        roots.append(slug)
        add_from(recipe, 0, ())
    return RecipePlan(
        recipes=roots,
        steps=steps,
        groups=groups,
        contributions=contributions,
        deduplicated=dropped,
        composed=composed,
        warnings=warnings,
    )
