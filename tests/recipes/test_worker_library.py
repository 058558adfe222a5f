"""A worker reads its recipe library once per process, when it starts, and again on a change."""

from pathlib import Path

import pytest

import activities.recipes as recipes_module
from activities.recipes import RecipeActivities
from activities.store.artifacts import LocalArtifactStore
from activities.store.events import open_event_store
from compiler.recipes.disk import load_library

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
