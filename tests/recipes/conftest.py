"""Recipe builders shared by the recipe tests: specs, parsed recipes, libraries on disk."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.recipes import RecipeLibrary, render_document
from compiler.recipes.document import recipe_from_spec
from schemas.recipes import Recipe

ROOT = Path(__file__).resolve().parents[2]
STDLIB_RECIPES = ROOT / "stdlib" / "recipes"
DATA = ROOT / "tests" / "data" / "recipes"


def spec(slug: str = "sample", **fields: Any) -> dict[str, Any]:
    """A valid recipe spec dict; keyword arguments replace or add fields."""
    base: dict[str, Any] = {
        "slug": slug,
        "title": f"Sample {slug}",
        "summary": "A sample recipe used by the tests",
        "tags": ["sample"],
        "category": "general",
        "steps": [
            {"title": "First", "body": "Do the first thing."},
            {"title": "Second", "body": "Do the second thing."},
        ],
    }
    base.update(fields)
    return base


def steps(*titles: str) -> list[dict[str, str]]:
    return [{"title": t, "body": f"Body of {t}."} for t in titles]


def recipe(slug: str = "sample", **fields: Any) -> Recipe:
    """A parsed, validated recipe built from `spec(slug, **fields)`."""
    return recipe_from_spec(spec(slug, **fields), source=f"<test:{slug}>")


def library(*recipes: Recipe) -> RecipeLibrary:
    return RecipeLibrary(list(recipes))


def write_recipe(directory: Path, s: dict[str, Any]) -> Path:
    """Write `s` as <directory>/<slug>/recipe.md and return the file."""
    target = directory / s["slug"] / "recipe.md"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_document(s), encoding="utf-8")
    return target
