"""The recipe substrate (seed 004): matching, composition, loops, effort routing, authoring.

Entry points (their names and signatures are API, used by tests outside this repository):
load_library, match, classify_effort, build_plan, parse_loop, is_dry, validate_spec, author,
import_skill.

`load_library(*dirs)`, `author(spec, library_dir)` and `import_skill(path)` read and write
files, so they live in activities/recipes/disk.py; they stay importable from here as a
compatibility alias that `__getattr__` resolves on first use (PEP 562). Importing this package
imports no I/O module, and compiler/ imports nothing above it at module level
(tests/test_layers.py allows this one alias by name).
"""

from typing import Any

from compiler.recipes.authoring import RecipeAuthorError
from compiler.recipes.compose import MAX_COMPOSE_DEPTH, build_plan
from compiler.recipes.directives import HARD_CAP, DirectiveError, is_dry, parse_loop
from compiler.recipes.document import RecipeFormatError, parse_recipe, render_document
from compiler.recipes.effort import classify_effort, effort_policy, effort_signals
from compiler.recipes.library import RecipeLibrary
from compiler.recipes.match import DEFAULT_THRESHOLD, Fitness
from compiler.recipes.skills import RecipeImportError
from compiler.recipes.validate import validate_spec
from schemas.recipes import MatchResult, RecipePlan, RecipeSpec, ScoredRecipe


def match(
    prompt: str,
    library: RecipeLibrary,
    *,
    threshold: float | None = None,
    fitness: Fitness | None = None,
) -> MatchResult:
    """Score `prompt` against `library`: tier none | low | high and the matches, best first."""
    return library.match(prompt, threshold=threshold, fitness=fitness)


# The public names whose code does file I/O: activities/recipes/disk.py holds them.
_ON_DISK = frozenset({"author", "import_skill", "load_library"})


def __getattr__(name: str) -> Any:
    """`load_library`, `author` and `import_skill`, from activities/recipes/disk.py on first use."""
    if name not in _ON_DISK:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from activities.recipes import disk  # noqa: PLC0415 - the alias's one upward import

    return getattr(disk, name)


__all__ = [
    "DEFAULT_THRESHOLD",
    "HARD_CAP",
    "MAX_COMPOSE_DEPTH",
    "DirectiveError",
    "MatchResult",
    "RecipeAuthorError",
    "RecipeFormatError",
    "RecipeImportError",
    "RecipeLibrary",
    "RecipePlan",
    "RecipeSpec",
    "ScoredRecipe",
    "author",
    "build_plan",
    "classify_effort",
    "effort_policy",
    "effort_signals",
    "import_skill",
    "is_dry",
    "load_library",
    "match",
    "parse_loop",
    "parse_recipe",
    "render_document",
    "validate_spec",
]
