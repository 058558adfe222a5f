"""A worker reads its recipe library once per process, when it starts, and again on a change."""

from pathlib import Path

import pytest

import activities.recipes.match as recipes_module
from activities.recipes.disk import load_library
from activities.recipes.match import RecipeActivities
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import open_event_store

ROOT = Path(__file__).resolve().parents[2]
STDLIB_RECIPES = ROOT / "stdlib" / "recipes"


@pytest.fixture
def loads(monkeypatch) -> list[tuple[Path, ...]]:
    """Each time the library is read from disk, the directories it read."""
    seen: list[tuple[Path, ...]] = []

    def counted(*dirs: Path):  # type: ignore[no-untyped-def]
        seen.append(dirs)
        return load_library(*dirs)

    recipes_module._library_at.cache_clear()
    monkeypatch.setattr(recipes_module, "load_library", counted)
    yield seen
    recipes_module._library_at.cache_clear()


def activities_over(tmp_path: Path, *dirs: Path) -> RecipeActivities:
    events = open_event_store(f"sqlite:///{tmp_path / 'forge.db'}")
    return RecipeActivities(list(dirs), LocalArtifactStore(tmp_path / "artifacts"), events)


def test_workers_in_one_process_share_one_read_of_the_library(tmp_path, loads):
    first = activities_over(tmp_path, STDLIB_RECIPES)
    first.warm()  # at worker start
    assert len(loads) == 1 and len(first.library()) > 0
    second = activities_over(tmp_path, STDLIB_RECIPES)
    second.warm()
    assert second.library() is first.library() and len(loads) == 1


def test_a_changed_recipe_file_is_read_again(tmp_path, loads):
    mine = tmp_path / "recipes"
    mine.mkdir()
    source = next(STDLIB_RECIPES.glob("**/*.md"))
    (mine / source.name).write_text(source.read_text())
    acts = activities_over(tmp_path, mine)
    before = acts.library()
    assert acts.library() is before and len(loads) == 1
    (mine / source.name).write_text(source.read_text() + "\n")  # its size changes
    assert acts.library() is not before and len(loads) == 2


def test_a_worker_whose_default_profile_rejects_the_warm_up_plan_still_starts(
    tmp_path, monkeypatch, caplog
):
    import activities.compile.passes as compile_module
    from activities.compile.passes import CompileActivities
    from activities.compile.typelib import load_library as load_types
    from activities.compile.typelib import load_profiles
    from compiler.errors import CompilerError
    from schemas.diagnostics import Diagnostic

    def rejected(*_args, **_kw):  # type: ignore[no-untyped-def]
        raise CompilerError([Diagnostic(code="E_UNKNOWN_PROFILE", message="no such", hint="fix")])

    monkeypatch.setattr(compile_module, "run_passes", rejected)
    monkeypatch.setattr(compile_module, "_warmed", compile_module.threading.Event())
    layers, _ = load_profiles()
    acts = CompileActivities(LocalArtifactStore(tmp_path / "a"), load_types(), layers)
    acts.warm()  # no exception: the worker starts, its runs report their own problems
    assert "compiler warm-up skipped: 1 problem(s) in the plan:" in caplog.text
