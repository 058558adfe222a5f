"""author (seed 004 §5.2-5.3): validate, stamp, fold triggers, persist; the never-overwrite rule."""

from __future__ import annotations

from pathlib import Path

import pytest

from activities.recipes.disk import RECIPE_FILE
from compiler.recipes import RecipeAuthorError, author, load_library, match
from schemas.recipes import RecipeSpec, RecipeStepSpec
from tests.recipes.conftest import spec, write_recipe


def test_author_stamps_folds_triggers_and_persists(tmp_path: Path) -> None:
    s = spec("invoice-chase", tags=["invoice"], triggers=["overdue payment", "invoice", "dunning"])
    written = author(s, tmp_path)
    target = tmp_path / "invoice-chase" / RECIPE_FILE
    assert target.is_file()
    assert written.source == str(target)
    assert written.authored_by == "authored"
    assert written.owner == "local"
    assert written.tags == ["invoice", "overdue payment", "dunning"]
    text = target.read_text()
    assert "authoredBy: authored" in text
    assert "triggers" not in text
    assert [p.name for p in (tmp_path / "invoice-chase").iterdir()] == [RECIPE_FILE]  # no temp


def test_an_authored_recipe_round_trips_and_is_matchable_next_turn(tmp_path: Path) -> None:
    assert match("chase the overdue payment", load_library(tmp_path)).tier == "none"
    written = author(
        spec(
            "invoice-chase",
            title="Chase overdue invoices",
            summary="Remind customers about unpaid invoices",
            tags=["invoice"],
            triggers=["overdue payment", "dunning"],
            not_when=["refund"],
            parallelism_groups=[[0, 1]],
        ),
        tmp_path,
    )
    lib = load_library(tmp_path)
    assert lib.problems == []
    assert lib["invoice-chase"] == written
    assert lib["invoice-chase"].groups == [[0, 1]]
    assert lib["invoice-chase"].not_when == ["refund"]
    result = match("chase the overdue payment", lib)
    assert result.selected is not None and result.selected.slug == "invoice-chase"


def test_author_accepts_a_recipe_spec_model(tmp_path: Path) -> None:
    model = RecipeSpec(
        slug="from-model",
        title="From a model",
        summary="Built as a RecipeSpec",
        tags=["model"],
        triggers=["pydantic spec"],
        steps=[RecipeStepSpec(title="Only", body="Do it.", done_when="it is done")],
    )
    written = author(model, tmp_path)
    assert written.tags == ["model", "pydantic spec"]
    assert written.steps[0].directives.done_when == "it is done"


def test_an_explicit_author_stamp_is_kept(tmp_path: Path) -> None:
    written = author(spec("bridged", authored_by="skill-bridge", owner="skills"), tmp_path)
    assert (written.authored_by, written.owner) == ("skill-bridge", "skills")
    assert author(spec("claims-curated", authored_by="curated"), tmp_path).authored_by == "authored"


def test_an_invalid_spec_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    with pytest.raises(RecipeAuthorError) as err:
        author(spec("../escape", tags=[]), tmp_path)
    assert len(err.value.problems) == 2
    assert any("slug '../escape' is unsafe" in p for p in err.value.problems)
    assert list(tmp_path.iterdir()) == []
    assert not (tmp_path.parent / "escape").exists()


def test_a_curated_recipe_is_never_overwritten(tmp_path: Path) -> None:
    curated = write_recipe(tmp_path, spec("debug", authored_by="curated", title="Curated"))
    before = curated.read_text()
    for overwrite in (False, True):
        with pytest.raises(RecipeAuthorError, match="curated recipe; authoring never overwrites"):
            author(spec("debug", title="Hijack"), tmp_path, overwrite=overwrite)
    assert curated.read_text() == before


def test_a_curated_flat_file_is_never_overwritten(tmp_path: Path) -> None:
    from compiler.recipes import render_document

    (tmp_path / "debug.md").write_text(render_document(spec("debug", authored_by="curated")))
    with pytest.raises(RecipeAuthorError, match="curated"):
        author(spec("debug"), tmp_path, overwrite=True)
    assert not (tmp_path / "debug").exists()


def test_an_authored_recipe_is_overwritten_only_when_asked(tmp_path: Path) -> None:
    author(spec("mine", title="First"), tmp_path)
    with pytest.raises(RecipeAuthorError, match=r"--overwrite` \(overwrite=True\)"):
        author(spec("mine", title="Second"), tmp_path)
    assert load_library(tmp_path)["mine"].title == "First"
    author(spec("mine", title="Second"), tmp_path, overwrite=True)
    assert load_library(tmp_path)["mine"].title == "Second"


def test_an_unparseable_existing_file_is_not_replaced(tmp_path: Path) -> None:
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / RECIPE_FILE).write_text("garbage")
    with pytest.raises(RecipeAuthorError, match="does not parse"):
        author(spec("mine"), tmp_path, overwrite=True)
    assert (tmp_path / "mine" / RECIPE_FILE).read_text() == "garbage"


def test_a_symlinked_target_file_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    lib = tmp_path / "lib"
    (lib / "mine").mkdir(parents=True)
    (lib / "mine" / RECIPE_FILE).symlink_to(victim)
    with pytest.raises(RecipeAuthorError, match="symlink"):
        author(spec("mine"), lib, overwrite=True)
    assert victim.read_text() == "precious"


def test_a_symlinked_target_directory_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    lib = tmp_path / "lib"
    lib.mkdir()
    (lib / "mine").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(RecipeAuthorError, match="symlink"):
        author(spec("mine"), lib)
    assert list(elsewhere.iterdir()) == []


def test_the_write_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    author(spec("mine", title="First"), tmp_path)
    target = tmp_path / "mine" / RECIPE_FILE
    before = target.read_text()

    def fail(src: object, dst: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr("activities.recipes.disk.os.replace", fail)
    with pytest.raises(OSError, match="disk full"):
        author(spec("mine", title="Second"), tmp_path, overwrite=True)
    assert target.read_text() == before  # the old recipe is whole, never half-written
