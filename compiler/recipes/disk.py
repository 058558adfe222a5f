"""The recipe library on disk: load, author, import. The one module of compiler/ that does I/O.

The issue's entry points take directories (`load_library(*dirs)`, `author(spec, library_dir)`,
`import_skill(path)`), so reading and writing recipe files lives here, beside the pure parser and
validator it calls; nothing else in compiler/ touches a file (tests/test_layers.py names this module
as the single exception). Recipes live at `<dir>/<slug>/recipe.md` (or `<dir>/<slug>.md`).
"""

import os
from pathlib import Path
from typing import Any

from compiler.recipes.document import RecipeFormatError, parse_document, recipe_from_spec
from compiler.recipes.document import render_document as _render
from compiler.recipes.library import RecipeLibrary
from compiler.recipes.skills import RecipeImportError, spec_dict, transpile_skill
from compiler.recipes.validate import normalize_spec, validate_spec
from schemas.error_codes import ErrorCode
from schemas.errors import ForgeError
from schemas.recipes import LibraryProblem, Recipe, RecipeSpec

RECIPE_FILE = "recipe.md"
MAX_FILE = 256 * 1024


class RecipeAuthorError(ForgeError, ValueError):
    """An authored recipe that was not written; `problems` lists every reason."""

    code = ErrorCode.RECIPE_AUTHOR_REFUSED

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or [message]


def recipe_files(directory: Path) -> list[tuple[str, Path]]:
    """(expected slug, file) for every recipe document in `directory`, sorted by slug."""
    found: dict[str, Path] = {}
    for entry in sorted(directory.iterdir()):
        if entry.is_dir() and (entry / RECIPE_FILE).exists():
            found[entry.name] = entry / RECIPE_FILE
        elif entry.is_file() and entry.suffix == ".md" and entry.name.lower() != "readme.md":
            found.setdefault(entry.stem, entry)
    return sorted(found.items())


def load_library(*dirs: str | Path) -> RecipeLibrary:
    """Every recipe in `dirs`; a later directory wins a slug. Bad files become problems."""
    library = RecipeLibrary(dirs=[str(d) for d in dirs])
    for d in dirs:
        directory = Path(d)
        if not directory.is_dir():
            library.problems.append(
                LibraryProblem(source=str(directory), reason="not a directory of recipes")
            )
            continue
        for slug, path in recipe_files(directory):
            try:
                recipe = read_recipe(path)
            except (RecipeFormatError, OSError, UnicodeDecodeError) as err:
                library.problems.append(LibraryProblem(source=str(path), reason=_reason(err, path)))
                continue
            if recipe.slug != slug:
                library.problems.append(
                    LibraryProblem(
                        source=str(path),
                        reason=f"slug {recipe.slug!r} differs from its file name {slug!r}; "
                        "rename one so they agree",
                    )
                )
                continue
            library.add(recipe)
    return library


def _reason(err: Exception, path: Path) -> str:
    text = str(err)
    prefix = f"{path}: "
    return text[len(prefix) :] if text.startswith(prefix) else text


def read_recipe(path: Path) -> Recipe:
    if path.is_symlink():
        raise RecipeFormatError(f"{path}: a symlinked recipe is not read")
    data = path.read_bytes()
    if len(data) > MAX_FILE:
        raise RecipeFormatError(f"{path}: {len(data):,} bytes; a recipe is at most 256 KiB")
    return recipe_from_spec(parse_document(data.decode("utf-8"), str(path)), str(path))


def author(
    spec: RecipeSpec | dict[str, Any], library_dir: str | Path, *, overwrite: bool = False
) -> Recipe:
    """Validate, stamp authoredBy, fold triggers into tags and persist `spec` (seed 004 §5.2-5.3).

    Never overwrites a curated recipe; overwrites an authored one only with `overwrite=True`.
    Raises RecipeAuthorError (nothing written) otherwise. Returns the recipe as read back.
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
    slug = s["slug"]
    root = Path(library_dir)
    root.mkdir(parents=True, exist_ok=True)
    target_dir = root / slug
    target = target_dir / RECIPE_FILE
    for existing in (target, root / f"{slug}.md"):
        if existing.is_symlink() or target_dir.is_symlink():
            raise RecipeAuthorError(f"{existing} is a symlink; refusing to write through it")
        if existing.exists():
            _may_replace(existing, overwrite)
    text = _render(s)
    recipe = recipe_from_spec(parse_document(text, str(target)), str(target))
    target_dir.mkdir(exist_ok=True)
    tmp = target_dir / f".{RECIPE_FILE}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)
    return recipe


def _may_replace(existing: Path, overwrite: bool) -> None:
    try:
        current = read_recipe(existing)
    except (RecipeFormatError, OSError, UnicodeDecodeError) as err:
        raise RecipeAuthorError(
            f"{existing} exists and does not parse ({err}); fix or remove it by hand"
        ) from None
    if current.authored_by == "curated":
        raise RecipeAuthorError(
            f"{existing} is a curated recipe; authoring never overwrites one (choose another slug)"
        )
    if not overwrite:
        raise RecipeAuthorError(
            f"{existing} exists (authoredBy {current.authored_by}); "
            "pass overwrite=True to replace it"
        )


def import_skill(path: str | Path) -> RecipeSpec:
    """Transpile a SKILL.md (or the directory holding one) into a validated recipe spec.

    Refuses a symlinked SKILL.md or a symlinked component of its path; raises RecipeImportError.
    Persist the result with `author(spec, library_dir)`.
    """
    given = Path(path)
    skill = given / "SKILL.md" if not given.name.endswith(".md") else given
    absolute = Path(os.path.abspath(skill))
    for part in [absolute, *absolute.parents]:
        if part.is_symlink():
            raise RecipeImportError(
                f"{skill}: {part} is a symlink; a skill is imported only from real paths"
            )
    if not absolute.is_file():
        raise RecipeImportError(f"{skill}: no SKILL.md here")
    if absolute.stat().st_size > MAX_FILE:
        raise RecipeImportError(f"{skill}: larger than 256 KiB")
    try:
        text = absolute.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise RecipeImportError(f"{skill}: not UTF-8 text") from None
    return transpile_skill(text, absolute.parent.name, str(skill))
