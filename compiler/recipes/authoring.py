"""Authoring a recipe, pure (seed 004 §5.2-5.3): what is written, and whether it may replace one.

activities/recipes/disk.py `author` does the file work around these: it checks the paths, reads
a recipe already at the target, and writes the document atomically.
"""

from typing import Any

from compiler.recipes.document import parse_recipe, render_document
from compiler.recipes.skills import spec_dict
from compiler.recipes.validate import normalize_spec, validate_spec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.recipes import Recipe, RecipeSpec

__all__ = ["RecipeAuthorError", "authored_document", "authored_spec", "check_replace"]


class RecipeAuthorError(ForgeError, ValueError):
    """An authored recipe that was not written; `problems` lists every reason."""

    code = ErrorCode.RECIPE_AUTHOR_REFUSED

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


def authored_spec(spec: RecipeSpec | dict[str, Any]) -> dict[str, Any]:
    """`spec` normalized, authoredBy stamped, owner defaulted and triggers folded into tags.

    Raises:
        RecipeAuthorError: the spec is invalid; `problems` lists every reason.
    """
    raw = spec_dict(spec) if isinstance(spec, RecipeSpec) else dict(spec)
    s = normalize_spec(raw)
    if s.get("authored_by") in (None, "curated"):
        s["authored_by"] = "authored"
    s.setdefault("owner", "local")
    tags = s.get("tags")
    triggers = s.pop("triggers", None) or []
    if isinstance(tags, list) and isinstance(triggers, list):
        s["tags"] = list(dict.fromkeys([*tags, *[t for t in triggers if isinstance(t, str)]]))
    problems = validate_spec(s)
    if problems:
        raise RecipeAuthorError("the recipe spec is invalid: " + "; ".join(problems), problems)
    return s


def authored_document(spec: dict[str, Any], source: str) -> tuple[str, Recipe]:
    """The recipe/1.0 text of an authored spec, and the recipe it reads back as from `source`."""
    text = render_document(spec)
    return text, parse_recipe(text, source)


def check_replace(existing: str, current: Recipe, *, overwrite: bool) -> None:
    """Refuse to replace the recipe `current`, read from `existing`, unless authoring may.

    A curated recipe is never replaced; an authored (or imported) one only with `overwrite`.

    Raises:
        RecipeAuthorError: naming the file and what to do instead.
    """
    if current.authored_by == "curated":
        raise RecipeAuthorError(
            f"{existing} is a curated recipe; authoring never overwrites one (choose another slug)"
        )
    if not overwrite:
        raise RecipeAuthorError(
            f"{existing} exists (authoredBy {current.authored_by}); "
            "replace it with `forge recipes import --overwrite` (overwrite=True)"
        )
