"""The recipe library on disk: load, author, import; the file work around compiler/recipes/.

Recipes live at `<dir>/<slug>/recipe.md` (or `<dir>/<slug>.md`). Parsing, building the library,
the authoring rules and the SKILL.md transpiler are pure and live in compiler/recipes/; this
module reads and writes the files. `compiler.recipes.load_library`, `author` and `import_skill`
are these functions, resolved on first use (the issue's public names, compiler/recipes/__init__.py).
"""

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from compiler.recipes.authoring import (
    RecipeAuthorError,
    authored_document,
    authored_spec,
    check_replace,
)
from compiler.recipes.document import RecipeFormatError, parse_recipe
from compiler.recipes.library import RecipeLibrary, RecipeText, library_from, load_problem
from compiler.recipes.skills import RecipeImportError, transpile_skill
from schemas.recipes import LibraryProblem, Recipe, RecipeSpec

__all__ = [
    "MAX_FILE",
    "RECIPE_FILE",
    "author",
    "import_skill",
    "load_library",
    "read_recipe",
    "recipe_files",
]

RECIPE_FILE = "recipe.md"
MAX_FILE = 256 * 1024
# What reading one recipe file can fail with: refused (symlink, size), unreadable, not UTF-8.
_UNREADABLE = (RecipeFormatError, OSError, UnicodeDecodeError)


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
    return library_from([str(d) for d in dirs], _read_all(dirs))


def _read_all(dirs: tuple[str | Path, ...]) -> Iterator[RecipeText | LibraryProblem]:
    for d in dirs:
        directory = Path(d)
        if not directory.is_dir():
            yield LibraryProblem(source=str(directory), reason="not a directory of recipes")
            continue
        for slug, path in recipe_files(directory):
            try:
                text = _read_text(path)
            except _UNREADABLE as err:
                yield load_problem(str(path), err)
                continue
            yield RecipeText(slug=slug, source=str(path), text=text)


def _read_text(path: Path) -> str:
    if path.is_symlink():
        raise RecipeFormatError(f"{path}: a symlinked recipe is not read")
    data = path.read_bytes()
    if len(data) > MAX_FILE:
        raise RecipeFormatError(f"{path}: {len(data):,} bytes; a recipe is at most 256 KiB")
    return data.decode("utf-8")


def read_recipe(path: Path) -> Recipe:
    """The recipe in one file; raises RecipeFormatError, OSError or UnicodeDecodeError."""
    return parse_recipe(_read_text(path), str(path))


def author(
    spec: RecipeSpec | dict[str, Any], library_dir: str | Path, *, overwrite: bool = False
) -> Recipe:
    """Validate, stamp authoredBy, fold triggers into tags and persist `spec` (seed 004 §5.2-5.3).

    Never overwrites a curated recipe; overwrites an authored one only with `overwrite=True`.
    Raises RecipeAuthorError (nothing written) otherwise. Returns the recipe as read back.
    """
    s = authored_spec(spec)
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
    text, recipe = authored_document(s, str(target))
    target_dir.mkdir(exist_ok=True)
    tmp = target_dir / f".{RECIPE_FILE}.tmp"
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, target)  # atomic: a reader sees the old recipe or the new one, never half
    return recipe


def _may_replace(existing: Path, overwrite: bool) -> None:
    try:
        current = read_recipe(existing)
    except _UNREADABLE as err:
        raise RecipeAuthorError(
            f"{existing} exists and does not parse ({err}); fix or remove it by hand"
        ) from None
    check_replace(str(existing), current, overwrite=overwrite)


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
