"""load_library: overlay precedence, and bad files reported with file and reason (seed 004 §5.3)."""

from __future__ import annotations

from pathlib import Path

from compiler.recipes import load_library, match
from tests.recipes.conftest import STDLIB_RECIPES, spec, write_recipe


def test_stdlib_recipes_load_cleanly() -> None:
    lib = load_library(STDLIB_RECIPES)
    assert lib.problems == []
    assert len(lib) >= 10
    for r in lib:
        assert r.authored_by == "curated", r.slug
        assert r.source.endswith(f"{r.slug}/recipe.md")
        assert r.steps and r.tags


def test_later_directory_wins_a_slug(tmp_path: Path) -> None:
    base, overlay = tmp_path / "base", tmp_path / "overlay"
    write_recipe(base, spec("shared", title="Base version", tags=["alpha"]))
    write_recipe(base, spec("only-base", tags=["beta"]))
    write_recipe(overlay, spec("shared", title="Overlay version", tags=["gamma"]))
    lib = load_library(base, overlay)
    assert lib.slugs == ["only-base", "shared"]
    assert lib["shared"].title == "Overlay version"
    assert lib.shadowed == {"shared": [str(base / "shared" / "recipe.md")]}
    assert [m.slug for m in match("gamma", lib).matches] == ["shared"]
    assert match("alpha", lib).matches == []  # the shadowed copy is not matchable
    assert load_library(overlay, base)["shared"].title == "Base version"


def test_flat_markdown_files_load_and_readme_is_ignored(tmp_path: Path) -> None:
    from compiler.recipes import render_document

    (tmp_path / "flat.md").write_text(render_document(spec("flat")))
    (tmp_path / "README.md").write_text("# Recipes\nnot a recipe\n")
    lib = load_library(tmp_path)
    assert (lib.slugs, lib.problems) == (["flat"], [])


BAD_FILES = {
    "no-front": ("### 1. Step\nbody\n", "no frontmatter"),
    "bad-yaml": ("---\nslug: [unclosed\n---\n### 1. Step\nbody\n", "not valid YAML"),
    "bad-slug": (
        "---\nslug: Bad_Slug\ntitle: T\nsummary: S\ntags: [x]\n---\n### 1. Step\nbody\n",
        "slug 'Bad_Slug' is unsafe",
    ),
    "no-steps": ("---\nslug: no-steps\ntitle: T\nsummary: S\ntags: [x]\n---\nprose only\n", "step"),
    "phantom": (
        "---\nslug: phantom\ntitle: T\nsummary: S\ntags: [x]\n---\n### 1. Step\n"
        "```\n### 2. Example\n```\n",
        "PHANTOM",
    ),
    "gap": (
        "---\nslug: gap\ntitle: T\nsummary: S\ntags: [x]\n---\n### 1. A\na\n### 3. C\nc\n",
        "numbered [1, 3]",
    ),
    "bad-loop": (
        "---\nslug: bad-loop\ntitle: T\nsummary: S\ntags: [x]\n---\n### 1. A\nloop: forever\na\n",
        "unknown mode",
    ),
    "renamed": (
        "---\nslug: other-name\ntitle: T\nsummary: S\ntags: [x]\n---\n### 1. A\na\n",
        "differs from its file name 'renamed'",
    ),
}


def test_malformed_files_are_reported_with_file_and_reason(tmp_path: Path) -> None:
    write_recipe(tmp_path, spec("good"))
    for slug, (text, _) in BAD_FILES.items():
        (tmp_path / slug).mkdir()
        (tmp_path / slug / "recipe.md").write_text(text)
    (tmp_path / "binary").mkdir()
    (tmp_path / "binary" / "recipe.md").write_bytes(b"---\n\xff\xfe\n---\n")
    lib = load_library(tmp_path)
    assert lib.slugs == ["good"]  # the rest of the library still loads
    reasons = {Path(p.source).parent.name: p.reason for p in lib.problems}
    assert set(reasons) == {*BAD_FILES, "binary"}
    for slug, (_, reason) in BAD_FILES.items():
        assert reason in reasons[slug], (slug, reasons[slug])
    for p in lib.problems:
        assert p.source.endswith("recipe.md")
        assert not p.reason.startswith(p.source), "the file is named once, in source"


def test_a_missing_directory_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    write_recipe(tmp_path / "real", spec("good"))
    lib = load_library(tmp_path / "absent", tmp_path / "real")
    assert lib.slugs == ["good"]
    assert [(p.source, p.reason) for p in lib.problems] == [
        (str(tmp_path / "absent"), "not a directory of recipes")
    ]


def test_a_symlinked_recipe_is_not_read(tmp_path: Path) -> None:
    outside = write_recipe(tmp_path / "outside", spec("sneaky"))
    lib_dir = tmp_path / "lib"
    (lib_dir / "sneaky").mkdir(parents=True)
    (lib_dir / "sneaky" / "recipe.md").symlink_to(outside)
    lib = load_library(lib_dir)
    assert lib.slugs == []
    assert [(p.source, p.reason) for p in lib.problems] == [
        (str(lib_dir / "sneaky" / "recipe.md"), "a symlinked recipe is not read")
    ]


def test_an_oversized_recipe_is_a_problem(tmp_path: Path) -> None:
    (tmp_path / "big").mkdir()
    (tmp_path / "big" / "recipe.md").write_text("x" * (256 * 1024 + 1))
    lib = load_library(tmp_path)
    assert lib.slugs == [] and "256 KiB" in lib.problems[0].reason
