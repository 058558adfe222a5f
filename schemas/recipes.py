"""Recipes (seed 004): recipe/1.0 documents, match results, merged plans, loop directives.

A recipe is a playbook in markdown: YAML frontmatter (slug, title, summary, tags, not-when,
composes, ...) and a body of `### N. Title` steps, each opening with directive lines (`done-when:`,
`loop:`, `uses:`, `invoke skill:`). The logic that reads and scores them is in compiler/recipes/.
"""

from typing import Literal

from pydantic import Field

from schemas.artifacts import ArtifactRef
from schemas.base import FrozenModel, PlainData
from schemas.bounds import Label
from schemas.scope import RunScoped, Scope

RECIPE_SCHEMA = "recipe/1.0"
SLUG_PATTERN = r"^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$"
Tier = Literal["none", "low", "high"]
LoadsIn = Literal["main", "subagent"]
Effort = Literal["trivial", "standard", "deep", "ultra"]
# Who wrote a recipe: the curated library, the authoring path, or the SKILL.md bridge (low trust).
AuthoredBy = Literal["curated", "authored", "compose-from-library", "skill-bridge"]
CATEGORIES = (
    "engineering",
    "data",
    "finance",
    "legal",
    "people",
    "research",
    "reporting",
    "web",
    "operations",
    "verification",
    "general",
)


class LoopSpec(FrozenModel):
    """A bounded repetition (seed 004 §6.2): `count N`, `until-dry [max M]`, `until M [max M]`."""

    mode: Literal["count", "until-dry", "until-marker"]
    max: int = Field(ge=1, le=25, description="iterations at most; clamped to [1, 25]")
    marker: Label | None = None
    clamped_from: int | None = Field(
        default=None, description="the count or max as written, when it had to be clamped"
    )


class Directives(FrozenModel):
    """The consecutive leading directive lines of a step body; nothing later fires."""

    done_when: str = ""
    loop: LoopSpec | None = None
    uses: str | None = None
    invoke_skill: str | None = None


class RecipeStep(FrozenModel):
    index: int = Field(ge=0, description="0-based position in the recipe")
    title: str
    body: str = Field(description="the step body as written, directive lines included")
    prose: str = Field(description="the body after its leading directive lines")
    directives: Directives = Directives()


class Recipe(FrozenModel):
    """One parsed recipe/1.0 document."""

    slug: str
    title: str
    summary: str
    tags: list[str] = Field(default_factory=list)
    not_when: list[str] = Field(default_factory=list)
    composes: list[str] = Field(default_factory=list)
    loads_in: list[LoadsIn] = Field(default_factory=lambda: list[LoadsIn](["main"]))
    authored_by: AuthoredBy = "curated"
    owner: str = "forge"
    category: str = "general"
    domain_packs: list[str] = Field(default_factory=list)
    workflow_packs: list[str] = Field(default_factory=list)
    groups: list[list[int]] = Field(
        default_factory=list, description="parallelism groups: run in order, members in parallel"
    )
    steps: list[RecipeStep]
    source: str = Field(default="", description="where it was read from (file path)")
    lineage: dict[str, str] = Field(default_factory=dict)

    @property
    def key(self) -> str:
        """owner/slug: how fitness and run tags name this recipe."""
        return f"{self.owner}/{self.slug}"


class LibraryProblem(FrozenModel):
    """A recipe file that could not be loaded: the rest of the library still loads."""

    source: str
    reason: str


class ScoredRecipe(FrozenModel):
    slug: str
    score: float = Field(description="final score: lexical base, anti-penalty, then fitness")
    anti_penalty: float = Field(default=0.0, ge=0, description="points taken by anti-triggers")
    fitness_adjustment: float = 0.0
    anti_vetoed: bool = False
    owner: str = "forge"
    hits: list[str] = Field(default_factory=list, description="what scored, for the trail")


class MatchResult(FrozenModel):
    tier: Tier
    matches: list[ScoredRecipe] = Field(
        description="recipes that cleared the threshold, best first (at most 20)"
    )
    considered: list[ScoredRecipe] = Field(
        default_factory=list, description="the best 20 recipes with any evidence, best first"
    )
    threshold: float = 3.0
    catalog_size: int = 0

    @property
    def selected(self) -> ScoredRecipe | None:
        return self.matches[0] if self.matches else None


class PlanStep(FrozenModel):
    """One step of a merged plan, badged with the recipe it came from."""

    index: int
    title: str
    prose: str
    directives: Directives
    source: str = Field(description="slug of the recipe the step came from (the badge)")
    source_owner: str = "forge"
    review: bool = Field(
        default=False,
        description="the fresh-context doubt-driven review that ends an ultra plan: an "
        "evaluate step over every artifact before it, never a producing conversation",
    )


class RecipePlan(FrozenModel):
    """The instance of one or more recipes (seed 004 §2.3, §4.1): ordered, de-duplicated steps."""

    recipes: list[str] = Field(description="slugs of the matched recipes, in order")
    steps: list[PlanStep]
    groups: list[list[int]] = Field(description="0-based indices into steps, run in order")
    contributions: dict[str, int] = Field(
        default_factory=dict, description="steps each recipe contributed, after de-duplication"
    )
    deduplicated: int = Field(default=0, description="steps dropped as duplicates by title")
    composed: list[str] = Field(default_factory=list, description="slugs inlined by composes:")
    warnings: list[str] = Field(default_factory=list)


class RecipeStepSpec(FrozenModel):
    title: str
    body: str
    done_when: str = ""


class RecipeSpec(FrozenModel):
    """What authoring and the SKILL.md bridge produce; validate_spec checks its dict form."""

    slug: str
    title: str
    summary: str
    tags: list[str]
    not_when: list[str] = Field(default_factory=list)
    triggers: list[str] = Field(default_factory=list)
    composes: list[str] = Field(default_factory=list)
    loads_in: list[LoadsIn] = Field(default_factory=lambda: list[LoadsIn](["main"]))
    category: str = "general"
    owner: str = "local"
    authored_by: AuthoredBy = "authored"
    domain_packs: list[str] = Field(default_factory=list)
    workflow_packs: list[str] = Field(default_factory=list)
    steps: list[RecipeStepSpec]
    parallelism_groups: list[list[int]] | None = None
    lineage: dict[str, str] = Field(default_factory=dict)


# Events the recipe substrate records (seed 004 §8.3, §11.2).
RECIPE_TRAIL = "recipe.trail.v1"  # one decision-trail entry: payload {verb, summary, detail}
RUN_TAGGED = "run.tagged.v1"  # payload {tags: ["recipe:<owner>/<slug>", ...]}: fitness attribution
TrailVerb = Literal[
    "searched",
    "matched",
    "no-match",
    "merged",
    "composed",
    "authored",
    "dispatch",
    "complete",
    "note",
    "transition",
    "warn",
]


class TrailEntry(FrozenModel):
    """One line of the decision trail: a fixed verb, a one-line summary, structured detail."""

    verb: TrailVerb
    summary: str
    detail: dict[str, PlainData] = Field(default_factory=dict)
    step_key: str | None = None


class RecipeFitness(FrozenModel):
    """Per-recipe outcomes from runs tagged recipe:<owner/slug> (seed 004 §11.2)."""

    key: str = Field(description="owner/slug")
    runs: int = Field(ge=0)
    successes: int = Field(ge=0)
    success_rate: float = Field(ge=0, le=1)
    mean_latency_s: float | None = None
    mean_tokens: float | None = None
    adjustment: float = Field(description="what the matcher adds (before its cap and floor)")


class EffortPolicy(FrozenModel):
    """What a tier sets for a run (seed 004 §7.3): the levers the run actually uses."""

    tier: Effort
    model_tier: Literal["minimal", "standard", "maximum"]
    thinking_budget_tokens: int = Field(ge=0)
    max_parallel_steps: int = Field(ge=1)
    orchestration: Literal["none", "solo", "parallel", "full-workflow"]
    plan: bool = Field(description="False: a trivial prompt gets no plan")
    verify_recipe: str | None = Field(
        default=None, description="a recipe appended as the last step (ultra: doubt-driven-verify)"
    )


class RecipesMatchInput(RunScoped):
    """recipes__match, at the start of every run: the objective (or the given plan's mission)."""

    run_id: str
    scope: Scope
    objective: str | None = None
    plan_ref: ArtifactRef | None = Field(
        default=None, description="a run started with a plan: matched for the trail only"
    )


class RecipesMatchResult(FrozenModel):
    outcome: Literal["plan-given", "seeded", "trivial", "needs-planner"]
    objective: str
    effort: EffortPolicy
    match: MatchResult
    trail: list[TrailEntry]
    candidate_ref: ArtifactRef | None = Field(
        default=None, description="outcome seeded: the recipe-built PlannerCandidate"
    )
    seeded_by: str | None = Field(default=None, description="owner/slug of the seeding recipe")
    hints: list[str] = Field(
        default_factory=list, description="low confidence: alternatives for the planner"
    )
    message: str = ""


class RecipePlanInput(RunScoped):
    """recipes__plan: the candidate a `uses:` step's child run compiles."""

    run_id: str
    # Payloads from before Scope carry none: those runs' artifacts are the default tenant's.
    scope: Scope = Scope.default()
    slug: str
    chain: list[str] = Field(description="recipes on the call stack, outermost first")
    mission: str


class RecipePlanResult(FrozenModel):
    candidate_ref: ArtifactRef
    seeded_by: str
    trail: list[TrailEntry]
