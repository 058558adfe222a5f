"""Recipes (seed 004): recipe/1.0 documents, match results, merged plans, loop directives.

A recipe is a playbook in markdown: YAML frontmatter (slug, title, summary, tags, not-when,
composes, ...) and a body of `### N. Title` steps, each opening with directive lines (`done-when:`,
`loop:`, `uses:`, `invoke skill:`). The logic that reads and scores them is in compiler/recipes/.
"""

from typing import Literal

from pydantic import Field

from schemas.base import FrozenModel

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
    marker: str | None = None
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
        description="recipes that cleared the threshold, best first"
    )
    considered: list[ScoredRecipe] = Field(
        default_factory=list, description="every recipe with any evidence, best first"
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
