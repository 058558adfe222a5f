"""recipes__match and recipes__plan: the recipe substrate at the start of every run (seed 004).

The library is read from disk once per process and cached until a recipe file changes (its path,
size or mtime), so the match on the hot path is token arithmetic over an in-memory index; a
worker reads it when it starts, so its first run does not. Fitness comes
from the event log: only runs tagged recipe:<owner/slug> count.
"""

import functools
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from temporalio import activity

from activities.cancellation import heartbeating
from activities.recipes.disk import author, load_library, recipe_files
from activities.recipes.fitness import fitness_lookup, recipe_fitness
from activities.store.artifacts import ArtifactStore
from activities.store.events import EventStore
from compiler.recipes import RecipeAuthorError, build_plan, effort_signals
from compiler.recipes.candidate import candidate_from_plan, with_verification
from compiler.recipes.effort import effort_policy
from compiler.recipes.library import RecipeLibrary
from compiler.recipes.match import Fitness
from compiler.recipes.skillpack import compose_from_library
from schemas import names
from schemas.artifacts import ArtifactRef
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.plan import PlannerCandidate
from schemas.recipes import (
    EffortPolicy,
    MatchResult,
    RecipePlan,
    RecipePlanInput,
    RecipePlanResult,
    RecipesMatchInput,
    RecipesMatchResult,
    ScoredRecipe,
    TrailEntry,
)
from schemas.scope import Scope
from schemas.skills import SkillPackage

MAX_USES_DEPTH = 3  # nested `uses:` calls beyond this fail the step (seed 004 §4.2)
SHOWN = 10  # candidates kept in the result and the trail


Signature = tuple[tuple[str, int, int], ...]  # each recipe file's path, mtime and size


@functools.lru_cache(maxsize=8)
def _library_at(signature: Signature, dirs: tuple[Path, ...]) -> RecipeLibrary:
    """The library in `dirs` whose files are `signature`: parsed once per process (read-only)."""
    return load_library(*dirs)


class RecipeActivities:
    def __init__(
        self,
        dirs: Sequence[Path],
        artifacts: ArtifactStore,
        events: EventStore,
        *,
        skills: Mapping[str, SkillPackage] | None = None,
        overlay: Path | None = None,
    ) -> None:
        """`dirs` in read precedence; `overlay` is where compose-from-library writes (last)."""
        self._dirs = list(dirs)
        if overlay is not None and overlay not in self._dirs:
            self._dirs.append(overlay)
        self._overlay = overlay
        self._skills = dict(skills or {})
        self._artifacts = artifacts
        self._events = events

    def library(self) -> RecipeLibrary:
        """The library, re-read only when a recipe file was added, removed or changed."""
        return _library_at(self._signature(), tuple(d for d in self._dirs if d.is_dir()))

    def warm(self) -> None:
        """Read the library and build its match index now (a worker calls it as it starts)."""
        self.library().scorer()

    def _signature(self) -> Signature:
        seen = []
        for d in self._dirs:
            if d.is_dir():
                for _, path in recipe_files(d):
                    st = path.stat()
                    seen.append((str(path), st.st_mtime_ns, st.st_size))
        return tuple(seen)

    @activity.defn(name=names.RECIPES_MATCH)
    @heartbeating
    def match(self, inp: RecipesMatchInput) -> RecipesMatchResult:
        library = self.library()
        objective = inp.objective or self._mission(inp.scope, inp.plan_ref)
        signals = effort_signals(objective)
        policy = effort_policy(signals.tier)
        fitness = self._fitness(inp.scope.tenant)
        result = library.match(objective, fitness=fitness)
        shown = result.model_copy(update={"considered": result.considered[:SHOWN]})
        trail = [
            TrailEntry(
                verb="searched",
                summary=f"searched {len(library)} recipes (effort {signals.tier})",
                detail={
                    "catalog_size": len(library),
                    "threshold": result.threshold,
                    "effort": signals.model_dump(mode="json"),
                    "candidates": [_scored(s) for s in shown.considered],
                    "problems": [p.model_dump() for p in library.problems],
                },
            )
        ]
        trail.append(_selection(result))
        common = {"objective": objective, "effort": policy, "match": shown}
        if inp.plan_ref is not None:
            return RecipesMatchResult(outcome="plan-given", trail=trail, **common)
        if not policy.plan:
            trail.append(TrailEntry(verb="note", summary="trivial prompt: no plan"))
            return RecipesMatchResult(
                outcome="trivial",
                trail=trail,
                message="a trivial prompt gets no plan; nothing was run",
                **common,
            )
        if result.tier == "none":
            composed = self._compose(objective, library, trail)
            if composed is not None:
                library = self.library()
                result = library.match(objective, fitness=fitness)
                top = (
                    result.selected
                    if result.selected and result.selected.slug == composed
                    else None
                )
                if top is None:  # matched weakly by its own query: use it, it was just written
                    recipe = library[composed]
                    top = ScoredRecipe(slug=recipe.slug, owner=recipe.owner, score=0.0)
                return self._seeded(inp, objective, top, library, policy, trail, common)
        if result.tier != "high" or result.selected is None:
            hints = [m.slug for m in result.matches[:5]]
            why = (
                f"the best recipes matched with low confidence ({', '.join(hints)}); they are "
                "passed to the planner as hints"
                if hints
                else "no recipe matched and the skill library has nothing to compose from"
            )
            trail.append(TrailEntry(verb="warn", summary=why))
            return RecipesMatchResult(
                outcome="needs-planner",
                trail=trail,
                hints=hints,
                message=(
                    f"{why}; the planner model plans this objective (compile__plan). To skip "
                    "it, start the run with a plan (forge run PLAN.json) or reword the objective "
                    "so one recipe matches clearly (forge recipes match TEXT)."
                ),
                **common,
            )
        return self._seeded(inp, objective, result.selected, library, policy, trail, common)

    def _seeded(
        self,
        inp: RecipesMatchInput,
        objective: str,
        top: ScoredRecipe,
        library: RecipeLibrary,
        policy: EffortPolicy,
        trail: list[TrailEntry],
        common: dict[str, Any],
    ) -> RecipesMatchResult:
        """The recipe's merged plan (verification appended for ultra) as Pass A's candidate."""
        plan = with_verification(build_plan([top], library), policy, library)
        trail += _composition(plan)
        candidate = candidate_from_plan(plan, library, objective)
        ref = self._store(inp.scope, inp.run_id, f"recipe-{top.slug}", candidate)
        seeded_by = f"{top.owner}/{top.slug}"
        return RecipesMatchResult(
            outcome="seeded", trail=trail, candidate_ref=ref, seeded_by=seeded_by, **common
        )

    def _compose(
        self, objective: str, library: RecipeLibrary, trail: list[TrailEntry]
    ) -> str | None:
        """No recipe matched: wire matching skills into a recipe (compose-from-library, §5.1).

        The recipe goes through the same validator and persistence as any authored one, into the
        writable overlay; from then on it is matchable like any other. Returns its slug.
        """
        spec = compose_from_library(objective, self._skills) if self._overlay else None
        if spec is None or self._overlay is None:
            return None
        existing = library.get(spec.slug)
        if existing is not None and existing.authored_by == "compose-from-library":
            written = existing
        else:
            try:
                written = author(spec, self._overlay)
            except RecipeAuthorError as err:
                trail.append(TrailEntry(verb="warn", summary=f"compose-from-library: {err}"))
                return None
        trail.append(
            TrailEntry(
                verb="authored",
                summary=f"composed {written.slug} from skills {written.lineage.get('skills', '')}",
                detail={
                    "slug": written.slug,
                    "authored_by": written.authored_by,
                    "skills": written.lineage.get("skills", "").split(","),
                    "source": written.source,
                },
            )
        )
        return written.slug

    def _fitness(self, tenant_id: str) -> Fitness:
        """The fitness seam, reading the event log only if a recipe clears the threshold.

        Most objectives never ask (nothing clears the bar), so the start of a run does not
        scan the log of every tagged run for nothing.
        """
        table: Fitness | None = None

        def lookup(key: str) -> float | None:
            nonlocal table
            if table is None:
                table = fitness_lookup(recipe_fitness(self._events, tenant_id=tenant_id))
            return table(key)

        return lookup

    @activity.defn(name=names.RECIPES_PLAN)
    def plan(self, inp: RecipePlanInput) -> RecipePlanResult:
        """The child plan of a `uses:` step; refuses a cycle or a call deeper than the cap."""
        if inp.slug in inp.chain:
            raise ForgeError(
                f"recursion guard: {' -> '.join([*inp.chain, inp.slug])} re-enters {inp.slug}",
                code=ErrorCode.RECURSION_GUARD,
            )
        if len(inp.chain) >= MAX_USES_DEPTH:
            raise ForgeError(
                f"recursion guard: `uses: {inp.slug}` would nest {len(inp.chain) + 1} recipe calls "
                f"deep (at most {MAX_USES_DEPTH}); chain {' -> '.join(inp.chain)}",
                code=ErrorCode.RECURSION_GUARD,
            )
        library = self.library()
        recipe = library.get(inp.slug)
        if recipe is None:
            raise ForgeError(
                f"`uses: {inp.slug}` names no recipe in the library "
                f"({', '.join(str(d) for d in self._dirs)})",
                code=ErrorCode.RECIPE_NOT_FOUND,
            )
        plan = build_plan([recipe.slug], library)
        candidate = candidate_from_plan(plan, library, inp.mission)
        ref = self._store(inp.scope, inp.run_id, f"uses-{inp.slug}", candidate)
        trail = [
            TrailEntry(
                verb="composed",
                summary=f"called {recipe.slug} as a sub-recipe ({len(plan.steps)} steps)",
                detail={"chain": [*inp.chain, inp.slug]},
            )
        ]
        return RecipePlanResult(candidate_ref=ref, seeded_by=recipe.key, trail=trail)

    def _mission(self, scope: Scope, ref: ArtifactRef | None) -> str:
        if ref is None:
            return ""
        try:
            doc = json.loads(self._artifacts.read_bytes(scope, ref.sha256, 64 * 1024 * 1024))
        except (OSError, ValueError):
            return ""
        return str(doc.get("mission", "")) if isinstance(doc, dict) else ""

    def _store(
        self, scope: Scope, run_id: str, name: str, candidate: PlannerCandidate
    ) -> ArtifactRef:
        return self._artifacts.put_bytes(
            scope,
            candidate.model_dump_json(indent=2, exclude_none=True).encode("utf-8"),
            logical_path=f"meta/{run_id}/plans/{name}.json",
            media_type="application/json",
        )


def _scored(s: ScoredRecipe) -> dict[str, object]:
    return s.model_dump(mode="json", exclude={"hits"}) | {"hits": s.hits[:8]}


def _selection(result: MatchResult) -> TrailEntry:
    top = result.selected
    if top is None:
        return TrailEntry(
            verb="no-match",
            summary=f"NO-MATCH: nothing reached the threshold {result.threshold:g}",
            detail={"threshold": result.threshold},
        )
    alternatives = [m.slug for m in result.matches[1:4]]
    vetoed = " (capped by an anti-trigger)" if top.anti_vetoed else ""
    return TrailEntry(
        verb="matched",
        summary=f"matched {top.slug} ({result.tier}, score {top.score:g}){vetoed}",
        detail={"slug": top.slug, "tier": result.tier, "score": top.score, "alts": alternatives},
    )


def _composition(plan: RecipePlan) -> list[TrailEntry]:
    entries = []
    if len(plan.contributions) > 1:
        entries.append(
            TrailEntry(
                verb="merged",
                summary=f"merged {len(plan.steps)} steps from {len(plan.contributions)} recipes "
                f"({plan.deduplicated} duplicate(s) dropped)",
                detail={"contributions": plan.contributions, "deduplicated": plan.deduplicated},
            )
        )
    for slug in plan.composed:
        entries.append(
            TrailEntry(
                verb="composed",
                summary=f"inlined {slug} (composes:)",
                detail={"slug": slug, "steps": plan.contributions.get(slug, 0)},
            )
        )
    for warning in plan.warnings:
        entries.append(TrailEntry(verb="warn", summary=warning))
    return entries
