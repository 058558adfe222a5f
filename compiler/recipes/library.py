"""A loaded recipe library: recipes by slug (overlay precedence), load problems, the match index.

`library_from` builds one from documents already read (activities/recipes/disk.py reads them).
"""

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from compiler.recipes import match as scoring
from compiler.recipes.document import RecipeFormatError, parse_recipe
from compiler.recipes.index import InvertedIndex, PromptKeys, RecipeKeys
from compiler.recipes.scorer import IndexedScorer
from schemas.recipes import LibraryProblem, MatchResult, Recipe


class RecipeLibrary:
    """Recipes from one or more directories; a later directory wins a slug (seed 004 §5.3)."""

    def __init__(
        self,
        recipes: list[Recipe] | None = None,
        problems: list[LibraryProblem] | None = None,
        dirs: list[str] | None = None,
    ) -> None:
        self._recipes: dict[str, Recipe] = {}
        self._keys: dict[str, RecipeKeys] | None = None
        self._scorer: IndexedScorer | None = None
        self.shadowed: dict[str, list[str]] = {}  # slug -> sources it overrode
        self.problems: list[LibraryProblem] = list(problems or [])
        self.dirs: list[str] = list(dirs or [])
        for recipe in recipes or []:
            self.add(recipe)

    def add(self, recipe: Recipe) -> None:
        """Add or override (read precedence: the last added wins its slug).

        Only the same owner overrides: a recipe of another owner (an imported skill, a local
        recipe) never shadows one it does not own; it is reported as a problem instead.
        """
        old = self._recipes.get(recipe.slug)
        if old is not None and old.owner != recipe.owner:
            self.problems.append(
                LibraryProblem(
                    source=recipe.source,
                    reason=f"{recipe.key} would shadow {old.key} ({old.source}); a recipe only "
                    "overrides one of its own owner: rename its slug",
                )
            )
            return
        if old is not None:
            self.shadowed.setdefault(recipe.slug, []).append(old.source)
        self._recipes[recipe.slug] = recipe
        self._keys = None
        self._scorer = None

    def get(self, slug: str) -> Recipe | None:
        return self._recipes.get(slug)

    def __getitem__(self, slug: str) -> Recipe:
        return self._recipes[slug]

    def __contains__(self, slug: object) -> bool:
        return slug in self._recipes

    def __len__(self) -> int:
        return len(self._recipes)

    def __iter__(self) -> Iterator[Recipe]:
        return iter(sorted(self._recipes.values(), key=lambda r: r.slug))

    @property
    def slugs(self) -> list[str]:
        return sorted(self._recipes)

    def keys(self) -> dict[str, RecipeKeys]:
        if self._keys is None:
            self._keys = {slug: RecipeKeys.of(r) for slug, r in self._recipes.items()}
        return self._keys

    def index(self) -> InvertedIndex:
        return self.scorer().index

    def scorer(self) -> IndexedScorer:
        """The indexed scorer, built on first use and after any change to the library."""
        if self._scorer is None:
            self._scorer = IndexedScorer(self._recipes, self.keys())
        return self._scorer

    def match(
        self,
        prompt: str,
        *,
        threshold: float | None = None,
        fitness: scoring.Fitness | None = None,
        indexed: bool = True,
    ) -> MatchResult:
        """Score `prompt`; `indexed=False` scores every recipe (what the index must agree with)."""
        bar = scoring.DEFAULT_THRESHOLD if threshold is None else float(threshold)
        keys = PromptKeys.of(prompt)
        if indexed:
            considered = self.scorer().rank(keys, threshold=bar, fitness=fitness)
        else:
            pairs = [(self._recipes[s], k) for s, k in sorted(self.keys().items())]
            considered = scoring.rank(keys, pairs, threshold=bar, fitness=fitness)
        return scoring.result(considered, bar, len(self._recipes))


@dataclass(frozen=True)
class RecipeText:
    """One recipe document as read: the slug its file name gives, where it was, its text."""

    slug: str
    source: str
    text: str


def load_problem(source: str, error: Exception) -> LibraryProblem:
    """A document that could not be read or parsed, as a problem (without the source it repeats)."""
    text = str(error)
    prefix = f"{source}: "
    reason = text[len(prefix) :] if text.startswith(prefix) else text
    return LibraryProblem(source=source, reason=reason)


def library_from(
    dirs: Sequence[str], found: Iterable[RecipeText | LibraryProblem]
) -> RecipeLibrary:
    """The library of what was read from `dirs`, in read order (a later document wins a slug).

    A document that does not parse, or whose slug differs from its file name, is a problem;
    so is each problem already found while reading.
    """
    library = RecipeLibrary(dirs=list(dirs))
    for item in found:
        if isinstance(item, LibraryProblem):
            library.problems.append(item)
            continue
        try:
            recipe = parse_recipe(item.text, item.source)
        except RecipeFormatError as err:
            library.problems.append(load_problem(item.source, err))
            continue
        if recipe.slug != item.slug:
            library.problems.append(
                LibraryProblem(
                    source=item.source,
                    reason=f"slug {recipe.slug!r} differs from its file name {item.slug!r}; "
                    "rename one so they agree",
                )
            )
            continue
        library.add(recipe)
    return library
