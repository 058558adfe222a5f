"""import_skill (seed 004 §11.3): agentskills.io SKILL.md files become recipe specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from compiler.recipes import RecipeImportError, author, import_skill, load_library, match
from compiler.recipes.validate import validate_spec
from tests.recipes.conftest import DATA

SKILLS = DATA / "skills"

FRONT = """---
name: {name}
description: Extract text and tables from PDF files and fill PDF forms. Use when the user mentions
  PDFs, forms or document extraction.
license: Apache-2.0
compatibility: Requires python 3 and pdfplumber
metadata:
  author: example-org
  version: "1.0"
allowed-tools: Bash(python:*) Read
---
"""

NUMBERED = """
# PDF tools

Works on any PDF.

## Instructions

1. Open the PDF with pdfplumber. Check the page count first.
2. Extract the text from each page:
   keep the page numbers.
3. Extract tables as CSV.

## Notes

Forms need pypdf.
"""


def write_skill(root: Path, name: str, body: str = NUMBERED, front: str = FRONT) -> Path:
    skill = root / name / "SKILL.md"
    skill.parent.mkdir(parents=True, exist_ok=True)
    skill.write_text(front.format(name=name) + body, encoding="utf-8")
    return skill


def test_a_numbered_procedure_becomes_the_steps(tmp_path: Path) -> None:
    spec = import_skill(write_skill(tmp_path, "pdf-tools").parent)
    assert spec.slug == "pdf-tools"
    assert spec.title == "Pdf tools"
    assert spec.summary == "Extract text and tables from PDF files and fill PDF forms."
    assert [s.title for s in spec.steps] == [
        "Open the PDF with pdfplumber",
        "Extract the text from each page",
        "Extract tables as CSV",
    ]
    assert spec.steps[1].body == "Extract the text from each page:\nkeep the page numbers."
    assert {"pdf", "tools", "extract", "tables", "forms"} <= set(spec.tags)
    assert (spec.authored_by, spec.owner, spec.category) == ("skill-bridge", "skills", "general")
    assert spec.lineage["skill"] == "pdf-tools"
    assert spec.lineage["license"] == "Apache-2.0"
    assert spec.lineage["allowed-tools"] == "Bash(python:*) Read"
    assert validate_spec(spec.model_dump(exclude_none=True)) == []


def test_the_skill_file_itself_may_be_named(tmp_path: Path) -> None:
    skill = write_skill(tmp_path, "pdf-tools")
    assert import_skill(skill) == import_skill(skill.parent)
    assert import_skill(str(skill)).slug == "pdf-tools"


def test_long_items_get_short_titles_cut_between_words(tmp_path: Path) -> None:
    long_clause = "Compare every extracted figure with the totals on the summary page"
    body = (
        "\n## Workflow\n\n"
        f"1. {long_clause}, then flag each difference in a short report\n"
        "2. Reconcile the remaining rows against the ledger export that finance sends every month\n"
    )
    spec = import_skill(write_skill(tmp_path, "pdf-tools", body).parent)
    assert [s.title for s in spec.steps] == [
        long_clause,  # the first clause, ending before the comma
        "Reconcile the remaining rows against the ledger export that finance",  # a word cut
    ]


def test_step_headings_become_steps(tmp_path: Path) -> None:
    body = "\n## Step 1: Gather inputs\nCollect the files.\n\n## Step 2: Convert\nRun it.\n"
    spec = import_skill(write_skill(tmp_path, "pdf-tools", body).parent)
    assert [(s.title, s.body) for s in spec.steps] == [
        ("Gather inputs", "Collect the files."),
        ("Convert", "Run it."),
    ]


def test_sections_become_steps_when_there_is_no_procedure(tmp_path: Path) -> None:
    body = "\n## Reading PDFs\nUse pdfplumber.\n\n## Filling forms\nUse pypdf.\n\n## Empty\n"
    spec = import_skill(write_skill(tmp_path, "pdf-tools", body).parent)
    assert [(s.title, s.body) for s in spec.steps] == [
        ("Reading PDFs", "Use pdfplumber."),
        ("Filling forms", "Use pypdf."),
    ]


def test_a_capability_without_sections_becomes_one_step(tmp_path: Path) -> None:
    spec = import_skill(write_skill(tmp_path, "pdf-tools", "\nJust use pdfplumber.\n").parent)
    assert [(s.title, s.body) for s in spec.steps] == [("Apply pdf tools", "Just use pdfplumber.")]


def test_minimal_frontmatter(tmp_path: Path) -> None:
    front = "---\nname: {name}\ndescription: Says hello.\n---\n"
    spec = import_skill(write_skill(tmp_path, "hello", "\nSay hello.\n", front).parent)
    assert (spec.slug, spec.summary, spec.lineage.get("license")) == ("hello", "Says hello.", None)


def test_an_imported_skill_is_authored_and_matchable(tmp_path: Path) -> None:
    spec = import_skill(write_skill(tmp_path / "src", "pdf-tools").parent)
    written = author(spec, tmp_path / "sandbox")
    assert written.authored_by == "skill-bridge"
    lib = load_library(tmp_path / "sandbox")
    assert lib.problems == []
    result = match("extract the tables from this pdf", lib)
    assert result.selected is not None and result.selected.slug == "pdf-tools"


def _front(name: str, extra: str = "") -> str:
    return f"---\nname: {name}\ndescription: x\n{extra}---\n"


BAD = [
    ("missing-name", "---\ndescription: x\n---\nbody\n", "name None must be"),
    ("Upper", _front("Upper") + "body\n", "name 'Upper' must be"),
    ("a--b", _front("a--b") + "body\n", "single hyphens"),
    ("-lead", _front("-lead") + "body\n", "name '-lead' must be"),
    ("mismatch", _front("other") + "body\n", "must equal its directory"),
    ("no-desc", "---\nname: no-desc\n---\nbody\n", "description is required"),
    ("blank-desc", "---\nname: blank-desc\ndescription: '  '\n---\nb\n", "description is required"),
    ("long-desc", f"---\nname: long-desc\ndescription: {'x' * 1025}\n---\nb\n", "longer than 1024"),
    ("extra", _front("extra", "hooks: rm -rf /\n") + "b\n", "unknown frontmatter field 'hooks'"),
    ("meta", _front("meta", "metadata: {v: 1}\n") + "b\n", "metadata must map"),
    ("tools", _front("tools", "allowed-tools: [Bash]\n") + "b\n", "space-separated"),
    ("no-front", "# Just markdown\n", "no YAML frontmatter"),
    ("bad-yaml", "---\nname: [unclosed\n---\nb\n", "not valid YAML"),
    ("list-front", "---\n- a\n- b\n---\nb\n", "frontmatter must be a mapping"),
    ("calls", _front("calls") + "## Step 1: Go\nuses: debug\nrun\n", "may not call recipes"),
    ("loops", _front("loops") + "## Step 1: Go\nloop: count 25\nr\n", "may not call recipes"),
    ("phantom", _front("phantom") + "## Usage\nt\n### 1. Hidden\nm\n## Other\nx\n", "PHANTOM"),
]


@pytest.mark.parametrize(("dirname", "text", "reason"), BAD, ids=[b[0] for b in BAD])
def test_bad_skills_are_refused_with_the_reason(
    tmp_path: Path, dirname: str, text: str, reason: str
) -> None:
    skill = tmp_path / dirname / "SKILL.md"
    skill.parent.mkdir()
    skill.write_text(text, encoding="utf-8")
    with pytest.raises(RecipeImportError, match=reason) as err:
        import_skill(skill.parent)
    assert str(err.value).startswith(str(skill))


def test_missing_oversized_and_binary_skills_are_refused(tmp_path: Path) -> None:
    with pytest.raises(RecipeImportError, match="no SKILL.md here"):
        import_skill(tmp_path)
    big = write_skill(tmp_path, "big", "x" * (256 * 1024))
    with pytest.raises(RecipeImportError, match="larger than 256 KiB"):
        import_skill(big.parent)
    binary = tmp_path / "binary" / "SKILL.md"
    binary.parent.mkdir()
    binary.write_bytes(b"---\nname: binary\n\xff\xfe\n")
    with pytest.raises(RecipeImportError, match="not UTF-8"):
        import_skill(binary.parent)


def test_a_symlinked_skill_file_is_refused(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "real", "pdf-tools")
    link_dir = tmp_path / "links" / "pdf-tools"
    link_dir.mkdir(parents=True)
    (link_dir / "SKILL.md").symlink_to(real)
    for target in (link_dir, link_dir / "SKILL.md"):
        with pytest.raises(RecipeImportError, match="is a symlink"):
            import_skill(target)


def test_a_symlinked_directory_on_the_path_is_refused(tmp_path: Path) -> None:
    real = write_skill(tmp_path / "real", "pdf-tools")
    (tmp_path / "skill-link").symlink_to(real.parent, target_is_directory=True)
    with pytest.raises(RecipeImportError, match="skill-link is a symlink"):
        import_skill(tmp_path / "skill-link")
    (tmp_path / "tree-link").symlink_to(tmp_path / "real", target_is_directory=True)
    with pytest.raises(RecipeImportError, match="tree-link is a symlink"):
        import_skill(tmp_path / "tree-link" / "pdf-tools")
    assert import_skill(real.parent).slug == "pdf-tools"  # the real path imports


def test_a_dotdot_after_a_symlink_is_not_followed_through_it(tmp_path: Path) -> None:
    # the OS would resolve link/.. to outside/; the importer reads the lexical path instead
    write_skill(tmp_path, "pdf-tools")
    evil = "---\nname: {name}\ndescription: Evil twin.\n---\n"
    write_skill(tmp_path / "outside", "pdf-tools", "\nevil\n", evil)
    (tmp_path / "outside" / "deeper").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "outside" / "deeper", target_is_directory=True)
    spec = import_skill(tmp_path / "link" / ".." / "pdf-tools")
    assert spec.summary.startswith("Extract text and tables")


# ---------------------------------------------------------------- the shared fixtures


def _fixtures(kind: str) -> list[Path]:
    root = SKILLS / kind
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


# What the shared fixtures must give; a fixture added later gets the generic checks only.
GOOD_STEPS = {
    "changelog-writer": [
        "Find the range",
        "Collect the changes",
        "Classify",
        "Write the entry",
        "Check",
    ],
    "csv-cleanup": ["Apply csv cleanup"],  # a capability without a procedure: one step
    "pdf-form-filling": [
        "Inspect the form",
        "Map the input record onto the field names",
        "Normalise values to what each field accepts",
        "Fill the fields with pypdf and set `NeedAppearances` so viewers render",
        "Flatten a copy of the filled form when the recipient should not edit it",
        "Verify",
    ],
}
BAD_REASONS = {
    "Bad_Name": "name 'Invoice_Parser Tool' must be 1-64 lower-case letters",
    "no-description": "description is required",
    "not-yaml": "frontmatter is not valid YAML",
    "phantom": "step 1 (Collect the tickets closed since last Monday",
}


@pytest.mark.parametrize("skill_dir", _fixtures("good"), ids=lambda p: p.name)
def test_good_fixture_skills_transpile(skill_dir: Path) -> None:
    spec = import_skill(skill_dir)
    assert spec.slug == skill_dir.name
    assert (spec.authored_by, spec.owner) == ("skill-bridge", "skills")
    assert spec.summary and spec.tags and spec.steps
    assert set(skill_dir.name.split("-")) <= set(spec.tags)
    for step in spec.steps:
        assert step.title.strip() and len(step.title) <= 80, step
        assert step.body.strip(), step
        assert "\n" not in step.title
    assert validate_spec(spec.model_dump(exclude_none=True)) == []
    if skill_dir.name in GOOD_STEPS:
        assert [s.title for s in spec.steps] == GOOD_STEPS[skill_dir.name]


def test_good_fixture_bodies_keep_the_procedure() -> None:
    if not (SKILLS / "good" / "changelog-writer").is_dir():
        pytest.skip("fixture not present")
    spec = import_skill(SKILLS / "good" / "changelog-writer")
    assert spec.steps[0].body.startswith("Determine the previous release tag")
    assert "git describe --tags --abbrev=0" in spec.steps[0].body
    assert spec.lineage["license"] == "MIT"
    assert spec.lineage["allowed-tools"] == "Bash(git:*) Read Edit"


@pytest.mark.parametrize("skill_dir", _fixtures("bad"), ids=lambda p: p.name)
def test_bad_fixture_skills_are_refused(skill_dir: Path) -> None:
    with pytest.raises(RecipeImportError) as err:
        import_skill(skill_dir)
    message = str(err.value)
    assert message.startswith(str(skill_dir / "SKILL.md"))
    assert len(message) > len(str(skill_dir / "SKILL.md")) + 10  # a reason, not just the file
    if skill_dir.name in BAD_REASONS:
        assert BAD_REASONS[skill_dir.name] in message


def test_the_phantom_fixture_is_refused_for_its_phantom_heading() -> None:
    if not (SKILLS / "bad" / "phantom").is_dir():
        pytest.skip("fixture not present")
    with pytest.raises(RecipeImportError, match="PHANTOM"):
        import_skill(SKILLS / "bad" / "phantom")


def test_fixture_skills_through_symlinks_are_refused(tmp_path: Path) -> None:
    good = _fixtures("good")
    if not good:
        pytest.skip("no good fixtures")
    (tmp_path / good[0].name).symlink_to(good[0], target_is_directory=True)
    with pytest.raises(RecipeImportError, match="is a symlink"):
        import_skill(tmp_path / good[0].name)
    copied = tmp_path / "copy" / good[0].name
    copied.mkdir(parents=True)
    (copied / "SKILL.md").symlink_to(good[0] / "SKILL.md")
    with pytest.raises(RecipeImportError, match="is a symlink"):
        import_skill(copied)


def test_good_fixtures_author_into_a_sandbox_and_match(tmp_path: Path) -> None:
    good = _fixtures("good")
    if not good:
        pytest.skip("no good fixtures")
    for skill_dir in good:
        author(import_skill(skill_dir), tmp_path)
    lib = load_library(tmp_path)
    assert lib.problems == [] and lib.slugs == [d.name for d in good]
    if "changelog-writer" in lib:
        result = match("draft the changelog entry for the release", lib)
        assert result.selected is not None and result.selected.slug == "changelog-writer"
