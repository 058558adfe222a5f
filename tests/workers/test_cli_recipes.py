"""`forge recipes match|show|list|check|import` as a person runs them, on the stdlib library."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from click.testing import Result
from typer.testing import CliRunner

from activities.compile.typelib import STDLIB_DIR
from activities.store.events import open_event_store
from compiler.recipes import import_skill, load_library
from schemas.events import EventDraft
from schemas.recipes import RUN_TAGGED
from workers.cli import app

Invoke = Callable[..., Result]
SKILLS = Path(__file__).resolve().parents[1] / "data" / "recipes" / "skills"
BILLING = "reconcile the invoices against the rate cards"
HAIKU = "write me a haiku about autumn"
T0 = datetime(2025, 6, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("FORGE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("COLUMNS", "250")
    for variable in ("FORGE_DATABASE_URL", "FORGE_PACKS_PATH"):
        monkeypatch.delenv(variable, raising=False)
    return tmp_path / "home"


@pytest.fixture
def forge(home: Path) -> Invoke:
    runner = CliRunner()
    return lambda *args: runner.invoke(app, ["recipes", *map(str, args)])


def write_recipe(directory: Path, slug: str, front: str, steps: str = "") -> Path:
    path = directory / slug / "recipe.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    body = steps or "### 1. Do the thing\ndone-when: it is done\nDo it carefully.\n"
    path.write_text(
        f"---\nschema: recipe/1.0\nslug: {slug}\ntitle: {slug.title()}\n{front}---\n{body}",
        encoding="utf-8",
    )
    return path


def tag_runs(home: Path, key: str, ok: int, failed: int = 0) -> None:
    """Finished runs tagged recipe:<key>, in the event store the CLI reads (FORGE_HOME/forge.db)."""
    home.mkdir(parents=True, exist_ok=True)
    with open_event_store(f"sqlite:///{home / 'forge.db'}") as store:
        for i in range(ok + failed):
            run = f"{key.replace('/', '-')}-{i}"
            root = f"{run}:run.started.v1"
            outcome = "run.completed.v1" if i < ok else "run.failed.v1"
            store.append(
                [
                    EventDraft(event_id=root, type="run.started.v1", run_id=run, timestamp=T0),
                    EventDraft(
                        event_id=f"{run}:tag",
                        type=RUN_TAGGED,
                        run_id=run,
                        caused_by=root,
                        timestamp=T0,
                        payload={"tags": [f"recipe:{key}"]},
                    ),
                    EventDraft(
                        event_id=f"{run}:end",
                        type=outcome,
                        run_id=run,
                        caused_by=root,
                        timestamp=T0 + timedelta(seconds=42),
                    ),
                ],
                stream_id=f"{run}:run",
            )


# ---- match --------------------------------------------------------------------------------


def test_match_renders_the_discovery_panel_and_selects(forge: Invoke) -> None:
    size = len(load_library(STDLIB_DIR / "recipes"))
    result = forge("match", BILLING)
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"Discovery · {size} recipes in the catalog · effort standard" in out
    assert "no event store yet: cold library (no fitness)" in out
    for column in ("slug", "score", "anti-trigger", "fitness", "vetoed", "hits"):
        assert column in out
    row = next(line for line in out.splitlines() if "billing-audit" in line)
    assert "tag 'rate card' +5" in row and "tag 'reconcile' +3" in row
    assert "threshold 3" in out
    assert "SELECTED billing-audit (high)" in out
    assert "NO-MATCH" not in out


def test_match_shows_a_visible_no_match(forge: Invoke) -> None:
    result = forge("match", HAIKU)
    assert result.exit_code == 0, result.output
    assert "NO-MATCH: no recipe reached the threshold 3" in result.output
    assert "SELECTED" not in result.output
    raised = forge("match", BILLING, "--threshold", "100")
    assert "NO-MATCH: no recipe reached the threshold 100 (best: billing-audit at" in raised.output


def test_match_json_is_the_match_result(forge: Invoke) -> None:
    result = forge("match", BILLING, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert data["tier"] == "high" and data["matches"][0]["slug"] == "billing-audit"
    assert data["threshold"] == 3.0 and data["catalog_size"] >= 20
    empty = json.loads(forge("match", HAIKU, "--json").stdout)
    assert (empty["tier"], empty["matches"]) == ("none", [])


def test_low_tier_lists_alternatives_and_shows_an_anti_trigger_veto(
    forge: Invoke, home: Path
) -> None:
    overlay = home / "recipes"
    write_recipe(overlay, "zorb-one", "summary: first zorblax playbook\ntags: [zorblax]\n")
    write_recipe(overlay, "zorb-two", "summary: second zorblax playbook\ntags: [zorblax]\n")
    tie = forge("match", "zorblax")
    assert tie.exit_code == 0, tie.output
    assert "SELECTED zorb-one (low)" in tie.output
    assert "low confidence (no clear lead); alternatives: zorb-two" in tie.output

    write_recipe(
        overlay,
        "quux-audit",
        "summary: audit the quux ledger\ntags: [quux ledger, quux]\nnot-when: [zorblax]\n",
    )
    vetoed = forge("match", "audit the quux ledger for zorblax")
    row = next(line for line in vetoed.output.splitlines() if "quux-audit" in line)
    assert "-3" in row and "vetoed" in row and "not-when ~'zorblax' -3" in row
    assert "SELECTED quux-audit (low)" in vetoed.output
    assert "vetoed by an anti-trigger" in vetoed.output


def test_match_shows_the_fitness_adjustment_of_a_tagged_recipe(forge: Invoke, home: Path) -> None:
    cold = forge("match", BILLING, "--json")
    base = json.loads(cold.stdout)["matches"][0]["score"]
    tag_runs(home, "forge/billing-audit", ok=5)
    tag_runs(home, "acme/render-report", ok=0, failed=5)  # another recipe's record
    result = forge("match", BILLING)
    assert result.exit_code == 0, result.output
    assert "fitness: 2 recipe(s) with a run record" in result.output
    row = next(line for line in result.output.splitlines() if "billing-audit" in line)
    assert "+1.00" in row and "5/5 ok · adj +1.00 · 42s" in row
    assert f"{base + 1:g}" in row
    data = json.loads(forge("match", BILLING, "--json").stdout)
    top = data["matches"][0]
    assert (top["slug"], top["fitness_adjustment"], top["score"]) == (
        "billing-audit",
        1.0,
        base + 1,
    )


def test_runs_of_another_owner_with_the_same_slug_lift_nothing(forge: Invoke, home: Path) -> None:
    tag_runs(home, "acme/billing-audit", ok=5)
    data = json.loads(forge("match", BILLING, "--json").stdout)
    assert data["matches"][0]["fitness_adjustment"] == 0.0


def test_an_unreadable_store_leaves_a_cold_library(
    forge: Invoke, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FORGE_DATABASE_URL", "postgresql://forge@127.0.0.1:1/forge")
    result = forge("match", BILLING)
    assert result.exit_code == 0, result.output
    assert "cannot read the event store (" in result.output
    assert "cold library (no fitness)" in result.output
    assert "SELECTED billing-audit (high)" in result.output
    assert "Traceback" not in result.output


# ---- show, list ---------------------------------------------------------------------------


def test_show_prints_frontmatter_source_and_steps(forge: Invoke) -> None:
    recipe = load_library(STDLIB_DIR / "recipes")["billing-audit"]
    result = forge("show", "billing-audit")
    assert result.exit_code == 0, result.output
    out = result.output
    assert "Billing Audit (forge/billing-audit)" in out
    assert str(STDLIB_DIR / "recipes" / "billing-audit" / "recipe.md") in out
    for field in ("summary", "tags", "not-when", "composes", "authoredBy", "owner", "category"):
        assert field in out
    assert f"{len(recipe.steps)} step(s)" in out
    for step in recipe.steps:
        assert step.title in out
    looped = next(s for s in recipe.steps if s.directives.loop)
    loop = looped.directives.loop
    assert loop is not None
    row = next(line for line in out.splitlines() if looped.title in line)
    assert f"{loop.mode} max {loop.max}" in row
    parallel = next(g for g in recipe.groups if len(g) > 1)
    assert "‖ " + ", ".join(str(i + 1) for i in parallel) in out


def test_show_an_unknown_slug_suggests_close_ones(forge: Invoke) -> None:
    result = forge("show", "biling-audit")
    assert result.exit_code == 2
    assert "error: RECIPE_NOT_FOUND: no recipe 'biling-audit' in the library" in result.output
    assert "did you mean billing-audit" in result.output
    assert "Traceback" not in result.output
    far = forge("show", "qqqqqqqq")
    assert far.exit_code == 2 and "see `forge recipes list`" in far.output


def test_list_shows_every_recipe_overrides_and_problems(forge: Invoke, home: Path) -> None:
    stdlib = load_library(STDLIB_DIR / "recipes")
    write_recipe(
        home / "recipes",
        "debug",
        "summary: our own debugging\ntags: [debug]\nauthoredBy: authored\nowner: forge\n",
    )
    # Another owner's recipe never shadows one it does not own (seed 004 §11.3).
    write_recipe(
        home / "recipes",
        "code-review",
        "summary: acme reviews\ntags: [review]\nauthoredBy: skill-bridge\nowner: acme\n",
    )
    broken = home / "recipes" / "broken" / "recipe.md"
    broken.parent.mkdir(parents=True)
    broken.write_text("no frontmatter here\n", encoding="utf-8")
    result = forge("list")
    assert result.exit_code == 0, result.output
    out = result.output
    assert f"{len(stdlib)} recipe(s)" in out
    for slug in stdlib.slugs:
        assert slug in out
    row = next(line for line in out.splitlines() if line.startswith("│ debug "))
    assert "authored" in row and "forge" in row and str(home / "recipes") in row
    assert "override: debug overrides " + str(STDLIB_DIR / "recipes" / "debug") in out
    review = next(line for line in out.splitlines() if line.startswith("│ code-review "))
    assert "curated" in review
    assert "2 problem(s)" in out and str(broken) in out and "no frontmatter" in out
    assert "acme/code-review would shadow forge/code-review" in " ".join(out.split())


# ---- check --------------------------------------------------------------------------------


def test_check_the_stdlib_passes(forge: Invoke) -> None:
    result = forge("check", STDLIB_DIR / "recipes")
    assert result.exit_code == 0, result.output
    assert "✓ billing-audit:" in result.output
    assert "recipe(s) check out" in result.output
    assert "overrides" not in result.output  # checking the library against itself


def test_check_names_every_problem_and_exits_1(forge: Invoke, tmp_path: Path) -> None:
    custom = tmp_path / "custom"
    write_recipe(custom, "good-one", "summary: fine\ntags: [fine]\ncomposes: [data-ingest]\n")
    write_recipe(
        custom,
        "uses-local",
        "summary: fine\ntags: [fine]\ncomposes: [good-one]\n",
        "### 1. Call it\nuses: good-one\nGo.\n",
    )
    write_recipe(
        custom,
        "dangling",
        "summary: refers to nothing\ntags: [x]\ncomposes: [nope]\n",
        "### 1. Call it\nuses: missing-one\nGo.\n",
    )
    write_recipe(custom, "loop-a", "summary: a\ntags: [a]\ncomposes: [loop-b]\n")
    write_recipe(custom, "loop-b", "summary: b\ntags: [b]\ncomposes: [loop-a]\n")
    (custom / "mismatch").mkdir()
    (custom / "mismatch" / "recipe.md").write_text(
        (custom / "good-one" / "recipe.md").read_text(encoding="utf-8"), encoding="utf-8"
    )
    result = forge("check", custom)
    assert result.exit_code == 1, result.output
    out = result.output
    assert "✓ good-one: 1 steps" in out and "✓ uses-local: 1 steps" in out
    assert "✓ dangling" not in out
    assert "composes 'nope', which is neither in this directory nor in the library" in out
    assert "step 1 (Call it) uses 'missing-one', which is neither" in out
    assert "composes cycle loop-a -> loop-b -> loop-a" in out
    assert "slug 'good-one' differs from its file name 'mismatch'" in out
    assert "problem(s)" in out and "Traceback" not in out


def test_check_a_missing_directory_is_a_usage_error(forge: Invoke, tmp_path: Path) -> None:
    result = forge("check", tmp_path / "nowhere")
    assert result.exit_code == 2
    assert "not a directory" in result.output


# ---- import -------------------------------------------------------------------------------


SKILL = """---
name: tidy-changelog
description: Tidy a project's changelog into keep-a-changelog sections. Use before a release.
license: MIT
---
# Tidy changelog

## Workflow

1. Collect the entries since the last release tag.
2. Group them into Added, Changed, Fixed and Removed.
3. Write the new section at the top of CHANGELOG.md.
"""


def skill_dir(tmp_path: Path, text: str = SKILL, name: str = "tidy-changelog") -> Path:
    directory = tmp_path / "skills" / name
    directory.mkdir(parents=True)
    (directory / "SKILL.md").write_text(text, encoding="utf-8")
    return directory


def test_import_writes_a_low_trust_recipe_that_becomes_matchable(
    forge: Invoke, home: Path, tmp_path: Path
) -> None:
    skill = skill_dir(tmp_path)
    result = forge("import", skill)
    assert result.exit_code == 0, result.output
    written = home / "recipes" / "tidy-changelog" / "recipe.md"
    assert written.is_file()
    out = result.output
    assert "3 step(s)" in out
    assert "Collect the entries since the last release tag" in out
    assert "Group them into Added, Changed, Fixed and Removed" in out
    assert (
        "imported skill tidy-changelog as skills/tidy-changelog (authoredBy skill-bridge) → "
        f"{written}"
    ) in out
    shown = forge("show", "tidy-changelog")
    assert "skill-bridge" in shown.output and "lineage.license" in shown.output
    matched = forge("match", "tidy the changelog before the release")
    assert "tidy-changelog" in matched.output and "SELECTED tidy-changelog" in matched.output

    again = forge("import", skill)
    assert again.exit_code == 2
    assert "error: RECIPE_AUTHOR_REFUSED: not imported:" in again.output
    assert "exists" in again.output and "--overwrite" in again.output
    assert "nothing was written" in again.output
    replaced = forge("import", skill, "--overwrite")
    assert replaced.exit_code == 0, replaced.output


def test_import_into_a_given_directory(forge: Invoke, home: Path, tmp_path: Path) -> None:
    into = tmp_path / "bridged"
    result = forge("import", skill_dir(tmp_path), "--into", into)
    assert result.exit_code == 0, result.output
    assert (into / "tidy-changelog" / "recipe.md").is_file()
    assert not (home / "recipes").exists()


@pytest.mark.parametrize(
    ("text", "name", "reason"),
    [
        (SKILL, "other-name", "must equal its directory name 'other-name'"),
        ("# no frontmatter\n", "tidy-changelog", "no YAML frontmatter"),
        (SKILL.replace("1. Collect", "1. uses: debug\n   Collect"), "tidy-changelog", "directive"),
    ],
)
def test_a_bad_skill_is_one_error_line_and_nothing_written(
    forge: Invoke, home: Path, tmp_path: Path, text: str, name: str, reason: str
) -> None:
    result = forge("import", skill_dir(tmp_path, text, name))
    assert result.exit_code == 2, result.output
    assert re.match(r"error: RECIPE_[A-Z_]+: not imported:", result.output), (
        result.output and reason in result.output
    )
    assert "Traceback" not in result.output
    assert written_recipes(home) == []


def written_recipes(home: Path) -> list[Path]:
    return sorted((home / "recipes").rglob("*.md")) if (home / "recipes").exists() else []


def _fixtures(kind: str) -> list[Path]:
    root = SKILLS / kind
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


@pytest.mark.parametrize("skill", _fixtures("good"), ids=lambda p: p.name)
def test_good_skill_fixtures_import(forge: Invoke, home: Path, skill: Path) -> None:
    spec = import_skill(skill)
    result = forge("import", skill)
    assert result.exit_code == 0, result.output
    assert (home / "recipes" / spec.slug / "recipe.md").is_file()
    assert f"{len(spec.steps)} step(s)" in result.output
    assert "skill-bridge" in result.output


@pytest.mark.parametrize("skill", _fixtures("bad"), ids=lambda p: p.name)
def test_bad_skill_fixtures_are_refused(forge: Invoke, home: Path, skill: Path) -> None:
    result = forge("import", skill)
    assert result.exit_code == 2, result.output
    assert re.match(r"error: RECIPE_[A-Z_]+: not imported:", result.output), result.output
    assert "Traceback" not in result.output
    assert written_recipes(home) == []
