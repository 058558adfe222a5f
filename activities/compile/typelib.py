"""Reads pack directories from disk into the compiler's pure type-library builder."""

import functools
import hashlib
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from compiler.errors import PackError
from compiler.plan.context import ProfileLayers
from compiler.recipes.skillpack import skill_package
from compiler.recipes.skills import RecipeImportError
from compiler.typesystem.library import (
    Category,
    LibraryDocument,
    TypeLibrary,
    build_library,
    with_skills,
)
from schemas.budget import ModelPrice, PriceTable
from schemas.profile import ExecutionProfile
from schemas.skills import SkillPackage

STDLIB_DIR = Path(__file__).resolve().parents[2] / "stdlib"
_SINGLE_FILES: tuple[tuple[str, Category], ...] = (
    ("kinds.yaml", "kinds"),
    ("slots.yaml", "slots"),
    ("generic.yaml", "generic"),
    ("adapters/adapters.yaml", "adapters"),
)
_DIRS: tuple[tuple[str, Category], ...] = (
    ("domains", "domain"),
    ("workflows", "workflow"),
    ("policies", "policy"),
)


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def read_yaml(path: Path) -> Any:
    """Parse one YAML file; a syntax error becomes a PackError naming file and line."""
    try:
        return yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "(unknown line)"
        raise PackError([(_display(path), where, f"invalid YAML: {exc.problem}")]) from None
    except UnicodeDecodeError as exc:
        raise PackError([(_display(path), "(bytes)", f"not UTF-8: {exc.reason}")]) from None


def pack_documents(directory: Path) -> list[LibraryDocument]:
    """Every library document in one pack directory (stdlib layout), in a stable order."""
    if not directory.is_dir():
        raise PackError([(str(directory), "(directory)", "is not a directory")])
    docs: list[LibraryDocument] = []
    problems: list[tuple[str, str, str]] = []
    for rel, category in _SINGLE_FILES:
        path = directory / rel
        if path.is_file():
            content = read_yaml(path)
            if category == "adapters":
                content = _with_code_hashes(path, content, problems)
            docs.append(LibraryDocument(source=_display(path), category=category, content=content))
    for sub, category in _DIRS:
        for path in sorted((directory / sub).glob("*.yaml")):
            docs.append(
                LibraryDocument(source=_display(path), category=category, content=read_yaml(path))
            )
    if problems:
        raise PackError(problems)
    return docs


def _with_code_hashes(path: Path, content: Any, problems: list[tuple[str, str, str]]) -> Any:
    """Attach each adapter module's sha256 so a changed adapter changes the contracts using it."""
    if not isinstance(content, dict) or not isinstance(content.get("adapters"), list):
        return content
    adapters = []
    for i, raw in enumerate(content["adapters"]):
        if isinstance(raw, dict) and isinstance(raw.get("module"), str):
            module = path.parent / f"{raw['module']}.py"
            if module.is_file():
                digest = hashlib.sha256(module.read_bytes()).hexdigest()
                raw = {**raw, "code_sha256": f"sha256:{digest}"}
            else:
                problems.append(
                    (
                        _display(path),
                        f"adapters[{i}].module",
                        f"no module file {module.name} next to adapters.yaml",
                    )
                )
        adapters.append(raw)
    return {**content, "adapters": adapters}


def load_library(extra_dirs: Sequence[Path] = ()) -> TypeLibrary:
    """The stdlib plus custom pack directories (FORGE_PACKS_PATH); later ones override."""
    docs: list[LibraryDocument] = []
    for directory in (STDLIB_DIR, *extra_dirs):
        docs.extend(pack_documents(directory))
    skills: dict[str, SkillPackage] = {}
    for directory in (STDLIB_DIR, *extra_dirs):
        skills.update(load_skills(directory / "skills"))
    return with_skills(build_library(docs), skills)


def _fingerprint(directories: Sequence[Path]) -> tuple[tuple[str, int, int], ...]:
    """Every file under `directories` with its modification time and size (lstat: a link too)."""
    entries: list[tuple[str, int, int]] = []
    for directory in directories:
        for path in sorted(directory.rglob("*")) if directory.is_dir() else []:
            try:
                st = path.lstat()
            except FileNotFoundError:  # removed while listed: the next call sees the change
                continue
            entries.append((str(path), st.st_mtime_ns, st.st_size))
    return tuple(entries)


_cached: dict[tuple[Path, ...], tuple[tuple[tuple[str, int, int], ...], TypeLibrary]] = {}
_cache_lock = threading.Lock()


def cached_library(extra_dirs: Sequence[Path] = ()) -> TypeLibrary:
    """`load_library(extra_dirs)`, reused while no file under its directories changed.

    For a long-lived process that compiles on request (the API): loading parses every pack
    and skill file (about a second of CPU), while listing their times and sizes takes a few
    milliseconds. A file added, removed, edited or touched loads the library again.
    """
    key = (STDLIB_DIR, *extra_dirs)
    seen = _fingerprint(key)
    with _cache_lock:
        hit = _cached.get(key)
        if hit is not None and hit[0] == seen:
            return hit[1]
    library = load_library(extra_dirs)
    with _cache_lock:
        _cached[key] = (seen, library)
    return library


def _sibling(directory: Path, name: str) -> str | None:
    """A regular, non-symlinked file beside SKILL.md, or None."""
    path = directory / name
    if path.is_symlink() or not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def load_skills(directory: Path) -> dict[str, SkillPackage]:
    """Every `<id>/SKILL.md` package under `directory`; a bad one is a PackError with the file."""
    found: dict[str, SkillPackage] = {}
    problems: list[tuple[str, str, str]] = []
    for path in sorted(directory.glob("*/SKILL.md")) if directory.is_dir() else []:
        if path.is_symlink() or path.parent.is_symlink():
            problems.append((_display(path), "(file)", "a symlinked skill is not loaded"))
            continue
        text = path.read_text(encoding="utf-8")
        files = [str(f.relative_to(path.parent)) for f in path.parent.rglob("*") if f.is_file()]
        try:
            pkg = skill_package(
                text,
                path.parent.name,
                read_file=functools.partial(_sibling, path.parent),
                files=files,
                source=_display(path),
            )
        except RecipeImportError as err:
            problems.append((_display(path), "SKILL.md", str(err)))
            continue
        found[pkg.skill_id] = pkg
    if problems:
        raise PackError(problems)
    return found


def _profiles_in(directory: Path) -> dict[str, ExecutionProfile]:
    found: dict[str, ExecutionProfile] = {}
    for path in sorted(directory.glob("*.yaml")) if directory.is_dir() else []:
        found.update(_profile_file(path))
    return found


def _profile_file(path: Path) -> dict[str, ExecutionProfile]:
    try:
        profile = ExecutionProfile.model_validate(read_yaml(path))
    except ValidationError as exc:
        raise PackError(
            [
                (_display(path), ".".join(str(x) for x in e["loc"]) or "(document)", e["msg"])
                for e in exc.errors()
            ]
        ) from None
    return {profile.profile_id: profile}


def load_profiles(
    extra_dirs: Iterable[Path] = (), *, home: Path | None = None, run_profile: str | None = None
) -> tuple[ProfileLayers, str | None]:
    """Profile layers (built-in < workspace < run) and the run-level reference, if any.

    `run_profile` is a profile id, or a path to a profile YAML file used for this run only.
    """
    extra_dirs = tuple(extra_dirs)
    builtin = _profiles_in(STDLIB_DIR / "profiles")
    for d in extra_dirs:
        builtin.update(_profiles_in(d / "profiles"))
    workspace: dict[str, ExecutionProfile] = {}
    default: str | None = None
    if home is not None:
        workspace = _profiles_in(home / "profiles")
        ws_file = home / "workspace.yaml"
        if ws_file.is_file():
            ws = read_yaml(ws_file) or {}
            default = ws.get("default_profile") if isinstance(ws, dict) else None
    run: dict[str, ExecutionProfile] = {}
    ref = run_profile
    if run_profile is not None and (run_profile.endswith((".yaml", ".yml")) or "/" in run_profile):
        path = Path(run_profile)
        if not path.is_file():
            raise PackError([(run_profile, "(file)", "profile file does not exist")])
        run = _profile_file(path)
        ref = next(iter(run))
    return ProfileLayers(
        builtin=builtin,
        workspace=workspace,
        run=run,
        workspace_default=default,
        prices=load_prices(extra_dirs),
    ), ref


def load_prices(extra_dirs: Iterable[Path] = ()) -> PriceTable:
    """The model price table: stdlib/models/prices.yaml, overlaid by each pack directory's."""
    models: dict[str, ModelPrice] = {}
    for directory in (STDLIB_DIR, *extra_dirs):
        path = directory / "models" / "prices.yaml"
        if not path.is_file():
            continue
        try:
            models.update(PriceTable.model_validate(read_yaml(path)).models)
        except ValidationError as exc:
            raise PackError(
                [
                    (_display(path), ".".join(str(x) for x in e["loc"]) or "(document)", e["msg"])
                    for e in exc.errors()
                ]
            ) from None
    return PriceTable(models=models)
